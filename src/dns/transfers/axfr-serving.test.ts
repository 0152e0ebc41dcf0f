import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import net from "node:net";
import * as packet from "dns-packet";
import type { TestPlatform } from "../../core/testing/platform.js";
import { createZone, encodeQuery, startDnsPlatform, udpQuery } from "../testing/helpers.js";

const Z = "serving-large.example";
const RECORDS = 20_000;
/** The API's largest batch. */
const BATCH = 3500;
const GUARD_MS = 60_000;

/**
 * The platform serving a large zone by AXFR (`edgecli serve`, real TCP): every record once between the two SOAs, and a
 * second question sent on the same connection right behind the AXFR answered after its last message.
 */
describe("serving a 20,000-record zone by AXFR", () => {
  let p: TestPlatform;
  let port: number;

  before(async () => {
    ({ p, port } = await startDnsPlatform(["--dns-workers", "0"]));
    const zoneId = await createZone(p, Z);
    for (let from = 0; from < RECORDS; from += BATCH) {
      const posts = Array.from({ length: Math.min(BATCH, RECORDS - from) }, (_, k) => {
        const i = from + k;
        return { type: "A", name: `h${i}`, content: `198.51.100.${i % 250}`, ttl: 300 };
      });
      const r = await p.api("POST", `/zones/${zoneId}/dns_records/batch`, { posts });
      assert.equal(r.status, 200, JSON.stringify(r.body).slice(0, 300));
    }
  });
  after(() => p?.dispose());

  it("sends every record, then answers the next question on the connection, while UDP queries are answered", async () => {
    const socket = net.connect({ port, host: "127.0.0.1" });
    const messages: ReturnType<typeof packet.decode>[] = [];
    try {
      await new Promise((resolve, reject) => {
        socket.once("connect", resolve);
        socket.once("error", reject);
      });
      const frame = (m: Buffer) => Buffer.concat([Buffer.from([m.length >> 8, m.length & 0xff]), m]);
      socket.write(Buffer.concat([frame(encodeQuery(Z, "AXFR", { id: 1 })), frame(encodeQuery(Z, "SOA", { id: 2 }))]));
      const udp = udpQuery(port, `h7.${Z}`, "A");
      await new Promise<void>((resolve, reject) => {
        const guard = setTimeout(() => reject(new Error(`${messages.length} messages after ${GUARD_MS} ms`)), GUARD_MS);
        let buf = Buffer.alloc(0);
        socket.on("data", (d) => {
          buf = Buffer.concat([buf, d]);
          while (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
            const m = packet.decode(buf.subarray(2, 2 + buf.readUInt16BE(0)));
            buf = buf.subarray(2 + buf.readUInt16BE(0));
            messages.push(m);
            if (m.id === 2) {
              clearTimeout(guard);
              resolve();
            }
          }
        });
        socket.on("close", () => reject(new Error(`closed after ${messages.length} messages`)));
      });
      assert.deepEqual(
        (await udp).answers?.map((a) => (a as { data?: unknown }).data),
        ["198.51.100.7"],
      );
    } finally {
      socket.destroy();
    }
    const last = messages.pop()!;
    assert.equal(last.id, 2, "the second question's answer comes last");
    assert.equal(last.answers?.[0]?.type, "SOA");
    assert.ok(messages.every((m) => m.id === 1));
    const rrs = messages.flatMap((m) => m.answers ?? []);
    assert.equal(rrs[0].type, "SOA");
    assert.equal(rrs.at(-1)!.type, "SOA");
    const hosts = rrs.filter((r) => r.type === "A").map((r) => r.name);
    assert.equal(hosts.length, RECORDS);
    assert.equal(new Set(hosts).size, RECORDS, "each record once");
    assert.ok(messages.length >= RECORDS / 200, `${messages.length} messages`);
  });
});
