import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { createServer, type Socket } from "node:net";
import { test } from "node:test";
import { startPlatform, uploadScript } from "../../workers/testing/helpers.js";
import { eventually } from "../../core/testing/eventually.js";

/** A bound on the stop, not a timing check: what it guards against took 69 s (a CA that never answers). */
const STOP_BOUND_MS = 20_000;

/**
 * Issue 30 hole 12: with the ACME CA unreachable (it accepts connections and never answers), SIGTERM took ~69 s and
 * logged "The database connection is not open": the order under way waited for its requests' timeouts, then wrote
 * its failure into a closed store. Stopping now aborts the order and uses no store after close.
 */
test("SIGTERM with a certificate order waiting on a CA that never answers: the platform stops in seconds and uses no closed store", async (t) => {
  const held: Socket[] = [];
  const blackhole = createServer((socket) => {
    held.push(socket);
    socket.on("error", () => undefined);
  });
  await new Promise<void>((resolve) => blackhole.listen(0, "127.0.0.1", resolve));
  const { port } = blackhole.address() as { port: number };
  const p = await startPlatform(["--edge-tls-port", "0", "--acme-directory", `https://127.0.0.1:${port}/directory`]);
  try {
    const zoneName = `stop${randomBytes(4).toString("hex")}.example`;
    const zone = await p.api("POST", "/zones", { name: zoneName, account: { id: p.accountId } });
    assert.equal(zone.status, 200, JSON.stringify(zone.body));
    assert.equal((await uploadScript(p, "stop-app", "export default { fetch() { return new Response('ok'); } };")).status, 200);
    const attached = await p.api("PUT", `/accounts/${p.accountId}/workers/domains`, {
      hostname: `www.${zoneName}`,
      service: "stop-app",
      zone_id: zone.body.result.id,
    });
    assert.equal(attached.status, 200, JSON.stringify(attached.body));
    // The order is under way: its first request to the CA is connected and waits for an answer.
    await eventually(() => held.length > 0, "the order's connection to the CA", 60_000);

    const started = Date.now();
    await p.stop();
    const took = Date.now() - started;
    t.diagnostic(`SIGTERM to exit: ${took} ms`);
    assert.equal(p.process.exitCode, 0, p.output().slice(-2000));
    assert.ok(took < STOP_BOUND_MS, `the platform stopped in ${took} ms`);
    assert.doesNotMatch(p.output(), /database connection is not open|shutdown failed/i);
    assert.match(p.logs(), /a Custom Domain certificate order was given up: the platform is stopping/);
  } finally {
    await p.dispose();
    for (const s of held) s.destroy();
    blackhole.close();
  }
});
