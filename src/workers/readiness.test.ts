import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { createServer } from "node:net";
import { test } from "node:test";
import { request } from "undici";
import { startTestPlatform, type TestPlatform } from "../core/testing/platform.js";
import { uploadScript } from "./testing/helpers.js";

const SCRIPTS = 6;
const worker = (label: string) => `export default { fetch() { return new Response("${label}"); } };`;

/** A port nothing listens on now (the restarted platform must take a known one: requests are sent before it says where it is). */
async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
  const { port } = s.address() as { port: number };
  await new Promise((resolve) => s.close(resolve));
  return port;
}

interface Seen {
  host: string;
  status: number;
  text: string;
  retryAfter?: string;
}

/**
 * Issue 30 hole 3: the edge listened before its services had started, so right after a restart deployed Workers
 * answered "no worker is deployed" (404) and a Custom Domain fell through to the v4 API. Requests sent all through a
 * restart must get either no connection, a 503 with Retry-After, or the Worker's own answer; /healthz and /readyz say
 * 503 until then.
 */
test("restart: while starting, the edge answers 503 with Retry-After (probes too), never a 404 or the API; then every Worker and the Custom Domain", async () => {
  const first = await startTestPlatform();
  let second: TestPlatform | undefined;
  try {
    const zoneName = `ready${randomBytes(4).toString("hex")}.example`;
    const zone = await first.api("POST", "/zones", { name: zoneName, account: { id: first.accountId } });
    assert.equal(zone.status, 200, JSON.stringify(zone.body));
    for (let i = 0; i < SCRIPTS; i++) assert.equal((await uploadScript(first, `ready-${i}`, worker(`worker ${i}`))).status, 200);
    const domain = await first.api("PUT", `/accounts/${first.accountId}/workers/domains`, {
      hostname: `app.${zoneName}`,
      service: "ready-0",
      zone_id: zone.body.result.id,
    });
    assert.equal(domain.status, 200, JSON.stringify(domain.body));
    await first.stop();

    const expected = new Map<string, string>([[`app.${zoneName}`, "worker 0"]]);
    for (let i = 0; i < SCRIPTS; i++) expected.set(`ready-${i}.workers.localhost`, `worker ${i}`);
    const port = await freePort();
    const seen: Seen[] = [];
    const probes: Seen[] = [];
    let hammering = true;
    const hammer = async (hosts: string[], into: Seen[], path = "/") => {
      while (hammering) {
        for (const host of hosts) {
          try {
            const res = await request(`http://127.0.0.1:${port}${path}`, { headers: { host: `${host}:${port}` }, headersTimeout: 30_000 });
            const retryAfter = res.headers["retry-after"];
            into.push({ host, status: res.statusCode, text: await res.body.text(), retryAfter: typeof retryAfter === "string" ? retryAfter : undefined });
          } catch {
            // Not listening yet (or the connection was closed with a 503): retried.
            await new Promise((r) => setTimeout(r, 5));
          }
        }
      }
    };
    const hosts = [...expected.keys()];
    const hammers = [
      hammer(hosts, seen),
      hammer([...hosts].reverse(), seen),
      hammer(["localhost"], probes, "/healthz"),
      hammer(["localhost"], probes, "/readyz"),
    ];
    try {
      second = await startTestPlatform({ stateDir: first.stateDir, credentials: first, args: ["--port", String(port)] });
      // Some more after ready: every Worker is served from then on.
      const readyAt = seen.length;
      const until = Date.now() + 60_000;
      while (seen.slice(readyAt).filter((s) => s.status === 200).length < hosts.length * 2 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    } finally {
      hammering = false;
      await Promise.all(hammers);
    }

    const wrong = seen.filter((s) => !(s.status === 503 && s.retryAfter === "1") && !(s.status === 200 && s.text === expected.get(s.host)));
    assert.deepEqual(wrong.slice(0, 5), [], `${wrong.length} of ${seen.length} answers were neither the Worker's nor a 503 with Retry-After`);
    const refused = seen.filter((s) => s.status === 503);
    assert.ok(refused.length > 0, "requests arrived while the platform was starting (else this test shows nothing)");
    assert.match(refused[0]!.text, /starting/);
    assert.ok(
      probes.some((s) => s.status === 503 && JSON.parse(s.text).status === "starting"),
      "the probes said 503 starting while the services started",
    );
    assert.ok(probes.every((s) => s.status === 503 || s.status === 200));
    for (const path of ["/healthz", "/readyz"]) {
      const res = await request(`http://127.0.0.1:${port}${path}`);
      assert.equal(res.statusCode, 200);
      assert.deepEqual(await res.body.json(), { status: "ok" });
    }
  } finally {
    await second?.stop();
    await first.dispose();
  }
});
