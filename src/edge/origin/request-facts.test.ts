import assert from "node:assert/strict";
import { createServer, request, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { clientIp, newRay } from "./forwarder.js";

test("rays are 16 hex digits and the platform's tag, never repeated across the batches they are drawn in", () => {
  // 512 rays a batch: three batches and a part of a fourth.
  const rays = Array.from({ length: 1_700 }, () => newRay());
  for (const ray of rays) assert.match(ray, /^[0-9a-f]{16}-EDGE$/);
  assert.equal(new Set(rays).size, rays.length);
  assert.equal(new Set(rays.map((r) => r.slice(0, 16))).size, rays.length, "the random part alone differs");
});

test("the client's address: an IPv4 client of a dual-stack listener as IPv4, an IPv6 one as it is", async (t) => {
  const seen: string[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    seen.push(`${req.socket.remoteAddress} -> ${clientIp(req)}`);
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, "::", resolve));
  t.after(() => new Promise((resolve) => server.close(resolve)));
  const port = (server.address() as AddressInfo).port;
  for (const host of ["127.0.0.1", "::1"])
    await new Promise<void>((resolve, reject) =>
      request({ host, port, agent: false }, (res) => res.resume().on("end", resolve))
        .on("error", reject)
        .end(),
    );
  assert.deepEqual(seen, ["::ffff:127.0.0.1 -> 127.0.0.1", "::1 -> ::1"]);
});
