import assert from "node:assert/strict";
import { test, type TestContext } from "node:test";
import { Postgres } from "../db/postgres.js";
import { testDatabase } from "../testing/services.js";
import { LocalBus, PostgresBus, type BusEvent } from "./bus.js";

/** Resolves when `check` holds, polling; a generous deadline only guards against a hang. */
async function until(check: () => boolean, what: string, deadlineMs = 30_000): Promise<void> {
  const start = Date.now();
  while (!check()) {
    if (Date.now() - start > deadlineMs) assert.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Two nodes' buses (each with its own pool) on one fresh database. */
async function twoNodes(t: TestContext) {
  const db = await testDatabase(t);
  if (!db) return undefined;
  const nodes = ["node-a", "node-b"].map((nodeId) => {
    const pg = new Postgres({ url: db.url, poolSize: 2 });
    const bus = new PostgresBus(pg, { url: db.url, nodeId, backoffMs: { first: 20, max: 500 } });
    return { pg, bus };
  });
  t.after(async () => {
    for (const n of nodes) {
      await n.bus.close();
      await n.pg.close();
    }
  });
  await Promise.all(nodes.map((n) => n.bus.start()));
  return { db, a: nodes[0], b: nodes[1] };
}

test("the embedded bus delivers a change to its area's subscribers at once", async () => {
  const bus = new LocalBus("solo");
  const dns: BusEvent[] = [];
  const kv: BusEvent[] = [];
  bus.subscribe("dns", (e) => dns.push(e));
  const stop = bus.subscribe("kv", (e) => kv.push(e));
  await bus.publish("dns", "zone:1");
  stop();
  await bus.publish("kv", "namespace:2");
  assert.deepEqual(dns, [{ type: "change", area: "dns", what: "zone:1", origin: "solo" }]);
  assert.deepEqual(kv, []);
});

test("a change published on one node reaches the other's subscribers, names its origin, and only its area's", async (t) => {
  const nodes = await twoNodes(t);
  if (!nodes) return;
  const { a, b } = nodes;
  const atB: BusEvent[] = [];
  const atA: BusEvent[] = [];
  const otherArea: BusEvent[] = [];
  b.bus.subscribe("dns", (e) => atB.push(e));
  a.bus.subscribe("dns", (e) => atA.push(e));
  b.bus.subscribe("kv", (e) => otherArea.push(e));
  const latencies: number[] = [];
  for (let i = 0; i < 20; i++) {
    const sent = performance.now();
    await a.bus.publish("dns", `zone:${i}`);
    await until(() => atB.length === i + 1, "the notice at node b");
    latencies.push(performance.now() - sent);
  }
  assert.deepEqual(atB[0], { type: "change", area: "dns", what: "zone:0", origin: "node-a" });
  await until(() => atA.length === 20, "node a's own notices");
  assert.deepEqual(otherArea, []);
  latencies.sort((x, y) => x - y);
  t.diagnostic(`bus latency node a -> node b: p50 ${latencies[10].toFixed(1)} ms, max ${latencies[19].toFixed(1)} ms`);
  await assert.rejects(a.bus.publish("dns", "x".repeat(8000)), /change notice too large/);
});

test("a notice published in a transaction goes out when it commits, and never when it rolls back", async (t) => {
  const nodes = await twoNodes(t);
  if (!nodes) return;
  const { a, b } = nodes;
  const seen: string[] = [];
  b.bus.subscribe("kv", (e) => e.type === "change" && seen.push(e.what));
  await assert.rejects(
    a.pg.withTransaction(async (tx) => {
      await a.bus.publish("kv", "rolled-back", tx);
      throw new Error("abort");
    }),
  );
  let committed = false;
  await a.pg.withTransaction(async (tx) => {
    await a.bus.publish("kv", "committed", tx);
    // Not delivered while the transaction is open.
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.deepEqual(seen, []);
    committed = true;
  });
  assert.ok(committed);
  await until(() => seen.length > 0, "the committed notice");
  // A later notice on the same connection order proves the rolled-back one is not merely late.
  await a.bus.publish("kv", "after");
  await until(() => seen.length === 2, "the notice after");
  assert.deepEqual(seen, ["committed", "after"]);
});

test("a node whose listening connection is cut reconnects, tells every subscriber to resync, and hears changes again", async (t) => {
  const nodes = await twoNodes(t);
  if (!nodes) return;
  const { a, b } = nodes;
  const events: BusEvent[] = [];
  b.bus.subscribe("workers", (e) => events.push(e));
  b.bus.subscribe("dns", (e) => events.push(e));
  // As a PostgreSQL restart would: the server ends node b's listening session.
  const killed = await a.pg.rows<{ pid: number }>(
    "SELECT pg_terminate_backend(pid) AS pid FROM pg_stat_activity WHERE application_name = 'edge-bus node-b' AND datname = current_database()",
  );
  assert.equal(killed.length, 1);
  await until(() => events.filter((e) => e.type === "resync").length === 2, "a resync for each subscriber");
  assert.equal(b.bus.connected, true);
  await a.bus.publish("workers", "script:s1");
  await until(() => events.some((e) => e.type === "change" && e.what === "script:s1"), "a change after the reconnect");
});
