import assert from "node:assert/strict";
import { test, type TestContext } from "node:test";
import { Postgres } from "../db/postgres.js";
import { testDatabase } from "../testing/services.js";
import { startTcpProxy } from "../testing/tcp-proxy.js";
import pg from "pg";
import { BUS_CHANNEL, LocalBus, PostgresBus, type BusEvent } from "./bus.js";

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

test("the embedded bus's barrier arms no timer while no handler's work runs (every zone-naming API request calls it)", async (t) => {
  const bus = new LocalBus("solo");
  bus.subscribe("dns", () => undefined);
  await bus.publish("dns", "zone:1");
  const setTimeoutCalls = t.mock.method(globalThis, "setTimeout");
  await bus.barrier();
  assert.equal(setTimeoutCalls.mock.callCount(), 0);
  // With work running, the barrier is bounded by a timer again.
  let release = () => {};
  bus.subscribe("kv", () => new Promise<void>((resolve) => (release = resolve)));
  await bus.publish("kv", "namespace:1");
  const waiting = bus.barrier();
  assert.equal(setTimeoutCalls.mock.callCount(), 1);
  release();
  await waiting;
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

test("a barrier resolves once every notice committed before it has been delivered and its work is done", async (t) => {
  const nodes = await twoNodes(t);
  if (!nodes) return;
  const { a, b } = nodes;
  const applied: string[] = [];
  // The handler's work takes a while (as a zone's reload from the store does): the barrier waits for it.
  b.bus.subscribe("dns", (e) => (e.type === "change" ? new Promise((resolve) => setTimeout(resolve, 300)).then(() => applied.push(e.what)) : undefined));
  const seenByA: BusEvent[] = [];
  a.bus.subscribe("dns", (e) => seenByA.push(e));
  for (let round = 1; round <= 3; round++) {
    await a.bus.publish("dns", `zone:${round}`);
    // The other node is asked at once, as a client's next request through it would be.
    await b.bus.barrier();
    assert.deepEqual(applied.slice(-1), [`zone:${round}`], `round ${round}: the change was applied before the barrier resolved`);
  }
  // Markers are no one's change: node a's subscribers saw only the changes (its own, with its origin).
  assert.deepEqual(
    seenByA.map((e) => (e.type === "change" ? e.what : e.type)),
    ["zone:1", "zone:2", "zone:3"],
  );
});

test("requests that wait at once share barriers: one marker at a time, however many wait", async (t) => {
  const nodes = await twoNodes(t);
  if (!nodes) return;
  const { b, db } = nodes;
  const listener = new pg.Client({ connectionString: db.url });
  // The database is dropped (its sessions ended) before this test's own after-hooks run.
  listener.on("error", () => undefined);
  await listener.connect();
  t.after(() => listener.end().catch(() => undefined));
  const markers: string[] = [];
  listener.on("notification", (n) => {
    if (n.payload && typeof JSON.parse(n.payload).b === "string") markers.push(n.payload);
  });
  await listener.query(`LISTEN ${BUS_CHANNEL}`);
  await Promise.all(Array.from({ length: 200 }, () => b.bus.barrier()));
  // All 200 came in one turn, before the first marker was sent: they share it.
  await until(() => markers.length >= 1, "the marker");
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.equal(markers.length, 1, `${markers.length} markers for 200 barriers in one turn`);
});

test("a caller that comes after a marker was sent waits for a marker of its own: the notices committed before its call are applied", async (t) => {
  const db = await testDatabase(t);
  if (!db) return;
  // Node b's connections lag behind PostgreSQL, so its first marker is on its way back while the rest happens.
  const proxy = await startTcpProxy(db.url.replace(/^postgres(ql)?:/, "http:"));
  t.after(() => proxy.close());
  const lagged = new URL(db.url);
  lagged.host = `127.0.0.1:${proxy.port}`;
  const pgA = new Postgres({ url: db.url, poolSize: 2 });
  const pgB = new Postgres({ url: lagged.toString(), poolSize: 2 });
  const a = new PostgresBus(pgA, { url: db.url, nodeId: "node-a" });
  const b = new PostgresBus(pgB, { url: lagged.toString(), nodeId: "node-b" });
  const listener = new pg.Client({ connectionString: db.url });
  listener.on("error", () => undefined);
  t.after(async () => {
    await listener.end().catch(() => undefined);
    for (const bus of [a, b]) await bus.close();
    for (const p of [pgA, pgB]) await p.close();
  });
  await Promise.all([a.start(), b.start(), listener.connect()]);
  let markers = 0;
  listener.on("notification", (n) => void (n.payload && typeof JSON.parse(n.payload).b === "string" && markers++));
  await listener.query(`LISTEN ${BUS_CHANNEL}`);
  let applied = false;
  b.subscribe("dns", () => new Promise((resolve) => setTimeout(resolve, 200)).then(() => (applied = true)));
  proxy.lag(300);

  const first = b.barrier();
  await until(() => markers === 1, "the first marker committed");
  await a.publish("dns", "zone:after-the-first-marker");
  const second = b.barrier();
  await second;
  assert.equal(applied, true, "the change committed before the second call was applied when it resolved");
  await first;
  assert.equal(markers, 2);
});

test("a barrier waits for the work of the notices before its marker, not for that of later ones", async (t) => {
  const nodes = await twoNodes(t);
  if (!nodes) return;
  const { a, b, db } = nodes;
  const listener = new pg.Client({ connectionString: db.url });
  listener.on("error", () => undefined);
  await listener.connect();
  t.after(() => listener.end().catch(() => undefined));
  let markers = 0;
  listener.on("notification", (n) => void (n.payload && typeof JSON.parse(n.payload).b === "string" && markers++));
  await listener.query(`LISTEN ${BUS_CHANNEL}`);
  const done = new Set<string>();
  // Each change's work takes longer than the one before: the later one would hold the barrier past the earlier.
  b.bus.subscribe("dns", (e) =>
    e.type === "change" ? new Promise((resolve) => setTimeout(resolve, e.what === "zone:early" ? 200 : 2_500)).then(() => done.add(e.what)) : undefined,
  );
  await a.bus.publish("dns", "zone:early");
  const barrier = b.bus.barrier();
  await until(() => markers === 1, "the marker committed");
  await a.bus.publish("dns", "zone:late");
  await barrier;
  assert.ok(done.has("zone:early"), "the earlier change was applied");
  assert.ok(!done.has("zone:late"), "the later change's work was not waited for");
});

test("a barrier does not wait while notices cannot arrive, and the embedded bus's waits for its handlers' work", async (t) => {
  const nodes = await twoNodes(t);
  if (!nodes) return;
  await nodes.b.bus.close();
  const started = Date.now();
  await nodes.b.bus.barrier();
  assert.ok(Date.now() - started < 2_000, "not the barrier's bound");

  const local = new LocalBus("solo");
  let done = false;
  local.subscribe("dns", () => new Promise((resolve) => setTimeout(resolve, 200)).then(() => (done = true)));
  await local.publish("dns", "zone:1");
  assert.equal(done, false);
  await local.barrier();
  assert.equal(done, true);
});
