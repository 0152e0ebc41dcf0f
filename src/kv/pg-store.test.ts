import assert from "node:assert/strict";
import { Readable } from "node:stream";
import { test, type TestContext } from "node:test";
import { LocalBus } from "../core/cluster/bus.js";
import { Postgres } from "../core/db/postgres.js";
import type { EdgeError } from "../core/errors.js";
import { assertPostgresRefusals, testContentStore, testNodeConnections, testPostgres, unreachablePostgres } from "../core/testing/backends.js";
import { until } from "../core/testing/cluster-load.js";
import { testDatabase } from "../core/testing/services.js";
import { PgBulkWriter } from "./bulk/pg-writer.js";
import { KvCodes } from "./errors.js";
import { KV_LIMITS } from "./limits.js";
import { KV_PG_MIGRATIONS } from "./pg-migrations.js";
import { PgKvStore } from "./pg-store.js";
import { KV_READ_CACHE_DEFAULTS, KvReadCache } from "./read-cache.js";
import { describeKvStore } from "./store.contract.js";

describeKvStore("PostgreSQL + S3", async (t) => {
  const pg = await testPostgres(t, "kv", KV_PG_MIGRATIONS);
  const content = pg && (await testContentStore(t, "kv"));
  return pg && content && { store: new PgKvStore(pg, content), close() {} };
});

// The same contract through the per-node read cache: every behaviour holds when reads are answered from memory.
describeKvStore("PostgreSQL + S3, read cache", async (t) => {
  const pg = await testPostgres(t, "kv", KV_PG_MIGRATIONS);
  const content = pg && (await testContentStore(t, "kv"));
  return pg && content && { store: new PgKvStore(pg, content, { bus: new LocalBus("test") }), close() {} };
});

// The streamed bulk writer on PostgreSQL, fed by the real JSON stream parser in small chunks.
const ACCOUNT = "c".repeat(32);

interface Backend {
  pg: Postgres;
  store: PgKvStore;
  bulk: PgBulkWriter;
  ns: string;
}

async function open(t: TestContext): Promise<Backend | undefined> {
  const pg = await testPostgres(t, "kv", KV_PG_MIGRATIONS, 8);
  const content = pg && (await testContentStore(t, "kv"));
  if (!pg || !content) return undefined;
  const store = new PgKvStore(pg, content);
  const ns = (await store.createNamespace(ACCOUNT, "bulk")).id;
  return { pg, store, bulk: new PgBulkWriter(pg, store), ns };
}

/** A body (JSON, or raw text) sent in `size`-byte pieces, so entries and strings straddle chunk boundaries. */
const body = (json: unknown, size = 777) => {
  const bytes = Buffer.from(typeof json === "string" ? json : JSON.stringify(json));
  return Readable.from(
    (function* () {
      for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
    })(),
  );
};
const entries = (n: number, value = (i: number) => `value-${i}`) => Array.from({ length: n }, (_, i) => ({ key: `k${i}`, value: value(i) }));
const count = async (pg: Postgres, table: string) => Number((await pg.row<{ n: string }>(`SELECT count(*) AS n FROM kv.${table}`))!.n);
const keyCount = async (b: Backend) => count(b.pg, "entries");
const code = (e: unknown) => (e as EdgeError).errors[0]!.code;
const big = Buffer.alloc(KV_LIMITS.inlineValueBytes + 10, 7);

/** What the content store holds that no row names (and was not deleted). */
async function leftOverContent(store: PgKvStore): Promise<number> {
  await new Promise((resolve) => setTimeout(resolve, 20));
  return store.gcContent(0);
}

test("a streamed bulk write writes every entry: small values in rows, big ones in the content store; nothing stays staged", async (t) => {
  const b = await open(t);
  if (!b) return;
  const written = await b.bulk.write(
    b.ns,
    body([
      ...entries(1200, (i) => `value-${i}-${"x".repeat(500)}`),
      { key: "big", value: big.toString("base64"), base64: true, metadata: { m: 1 }, expiration_ttl: 600 },
      { key: "é/ü", value: "unicode ✓" },
    ]),
  );
  assert.equal(written, 1202);
  assert.equal(await keyCount(b), 1202);
  assert.equal((await b.store.get(b.ns, "k1199"))?.value.toString(), `value-1199-${"x".repeat(500)}`);
  const bigEntry = await b.store.get(b.ns, "big");
  assert.deepEqual(bigEntry?.value, big);
  assert.deepEqual(bigEntry?.metadata, { m: 1 });
  assert.equal((await b.store.get(b.ns, "é/ü"))?.value.toString(), "unicode ✓");
  assert.equal(await count(b.pg, "bulk_staged"), 0);
  assert.equal(await count(b.pg, "bulk_writes"), 0);

  // A key written twice: the last one wins, and the content of the first is not left behind.
  await b.bulk.write(
    b.ns,
    body([
      { key: "twice", value: big.toString("base64"), base64: true },
      { key: "big", value: "now small" },
      { key: "twice", value: "second" },
    ]),
  );
  assert.equal((await b.store.get(b.ns, "twice"))?.value.toString(), "second");
  assert.equal((await b.store.get(b.ns, "big"))?.value.toString(), "now small");
  assert.equal(await leftOverContent(b.store), 0, "replaced and superseded content was deleted");
});

test("a bad entry in the middle of a bulk write writes nothing: no entry, nothing staged, no content", async (t) => {
  const b = await open(t);
  if (!b) return;
  await b.store.put(b.ns, "k5", Buffer.from("before"));
  // 700 entries, so a batch was staged, and a big value stored, before entry 701 is refused.
  const list: unknown[] = [
    ...entries(700),
    { key: "big", value: big.toString("base64"), base64: true },
    { key: "bad", value: "x", expiration_ttl: 5 },
    ...entries(50),
  ];
  await assert.rejects(
    b.bulk.write(b.ns, body(list)),
    (e: EdgeError) => e.status === 400 && code(e) === KvCodes.invalidTtl && /^entry 701: expiration_ttl/.test(e.message),
  );
  assert.equal(await keyCount(b), 1);
  assert.equal((await b.store.get(b.ns, "k5"))?.value.toString(), "before");
  assert.equal(await count(b.pg, "bulk_staged"), 0);
  assert.equal(await count(b.pg, "bulk_writes"), 0);
  assert.equal(await leftOverContent(b.store), 0);

  // The same refusals as SQLite's, in the same order: malformed JSON wins over a bad entry before it.
  await assert.rejects(
    b.bulk.write(b.ns, body('[{"key": "", "value": "x"}, {"key": oops}]')),
    (e: EdgeError) => e.status === 400 && /Malformed JSON/.test(e.message),
  );
  await assert.rejects(
    b.bulk.write(b.ns, body(entries(KV_LIMITS.bulkWriteEntries + 1))),
    (e: EdgeError) => e.status === 413 && code(e) === KvCodes.tooManyEntries,
  );
  await assert.rejects(b.bulk.write(b.ns, body({ key: "k", value: "v" })), (e: EdgeError) => e.status === 400 && /JSON array/.test(e.message));
  await assert.rejects(b.bulk.write(b.ns, body([]), KV_LIMITS.bulkBodyBytes + 1), (e: EdgeError) => e.status === 413);
  await assert.rejects(b.bulk.write("0".repeat(32), body(entries(3))), (e: EdgeError) => e.status === 404 && code(e) === KvCodes.namespaceNotFound);
  assert.equal(await keyCount(b), 1, "no refusal wrote anything");
  assert.equal(await count(b.pg, "bulk_staged"), 0);
});

test("concurrent bulk writes of the same keys in opposite orders: each is all or nothing, the last commit wins whole", async (t) => {
  const b = await open(t);
  if (!b) return;
  const n = 1500;
  const of = (writer: string) => entries(n, (i) => `${writer}-${i}`);
  const writers = ["a", "b", "c", "d"];
  // Opposite orders would deadlock writers that locked keys as they came; each also overlaps a single put and a delete.
  const results = await Promise.all([
    ...writers.map((w, i) => b.bulk.write(b.ns, body(i % 2 ? of(w).reverse() : of(w), 4096))),
    b.store.put(b.ns, "k7", Buffer.from("single")),
    b.store.deleteMany(b.ns, ["k1", "k2"]),
  ]);
  assert.deepEqual(results.slice(0, writers.length), [n, n, n, n]);
  const page = await b.store.getMany(
    b.ns,
    Array.from({ length: 100 }, (_, i) => `k${i * 15}`),
  );
  const winners = new Set([...page.values()].map((e) => e?.value.toString().split("-")[0]));
  assert.equal(winners.size, 1, `every key holds the value of one bulk write, got ${[...winners].join(", ")}`);
  assert.equal(await count(b.pg, "bulk_staged"), 0);
});

test("a bulk write into a namespace deleted while its body arrives is refused and leaves nothing", async (t) => {
  const b = await open(t);
  if (!b) return;
  let deleted = false;
  const bytes = Buffer.from(JSON.stringify([...entries(800), { key: "big", value: big.toString("base64"), base64: true }]));
  const slow = Readable.from(
    (async function* () {
      for (let i = 0; i < bytes.length; i += 4096) {
        // Once half the body is in (a batch staged), the namespace goes.
        if (!deleted && i > bytes.length / 2) {
          await b.store.deleteNamespace(ACCOUNT, b.ns);
          deleted = true;
        }
        yield bytes.subarray(i, i + 4096);
      }
    })(),
  );
  await assert.rejects(b.bulk.write(b.ns, slow), (e: EdgeError) => e.status === 404 && code(e) === KvCodes.namespaceNotFound);
  assert.equal(await keyCount(b), 0);
  assert.equal(await count(b.pg, "bulk_staged"), 0);
  assert.equal(await leftOverContent(b.store), 0);
});

test("PostgreSQL unreachable: the store's errors are the core 503 naming PostgreSQL", async (t) => {
  const pg = unreachablePostgres();
  t.after(() => pg.close());
  const store = new PgKvStore(pg, undefined as never);
  const bulk = new PgBulkWriter(pg, store);
  await assertPostgresRefusals([
    () => store.get("n".repeat(32), "k"),
    () => store.put("n".repeat(32), "k", Buffer.from("v")),
    () => store.list("n".repeat(32)),
    () => bulk.write("n".repeat(32), body(entries(2))),
  ]);
});

test("two nodes' KV read caches: what one node writes, overwrites, deletes or bulk-writes, the other (which had read it) sees once the notice arrives", async (t) => {
  const db = await testDatabase(t);
  const content = db && (await testContentStore(t, "kv"));
  if (!db || !content) return;
  // An hour's max age: here only the bus's notices can make node b forget what it read.
  const limits = { ...KV_READ_CACHE_DEFAULTS, maxAgeMs: 3_600_000 };
  const node = async (nodeId: string) => {
    const { pg, bus } = await testNodeConnections(t, db.url, nodeId, "kv", KV_PG_MIGRATIONS);
    const store = new PgKvStore(pg, content, { bus, cache: new KvReadCache(limits) });
    return { pg, store, bulk: new PgBulkWriter(pg, store) };
  };
  const a = await node("node-a");
  const b = await node("node-b");
  const ns = (await a.store.createNamespace(ACCOUNT, "shared")).id;
  const readOnB = async (key: string) => (await b.store.get(ns, key))?.value.toString() ?? null;
  const seesOnB = (key: string, expected: string | null) => until(async () => (await readOnB(key)) === expected, `node b to read ${key} = ${expected}`, 60_000);

  await a.store.put(ns, "k", Buffer.from("v1"));
  // A read during the arrival of the put's own notice is not kept: read until node b keeps both (the value and the miss).
  await until(
    async () => (await readOnB("k")) === "v1" && (await readOnB("missing")) === null && b.store.cache!.size.entries === 2,
    "node b to keep what it read",
    60_000,
  );
  await a.store.put(ns, "k", Buffer.from("v2"));
  await seesOnB("k", "v2");
  await a.store.put(ns, "missing", Buffer.from("now here"));
  await seesOnB("missing", "now here");
  await a.store.delete(ns, "k");
  await seesOnB("k", null);

  await a.store.putMany(ns, [
    { key: "m1", value: Buffer.from("1") },
    { key: "m2", value: Buffer.from("2") },
  ]);
  await until(async () => (await readOnB("m1")) === "1" && b.store.cache!.get(ns, "m1") !== undefined, "node b to keep m1", 60_000);
  await a.store.deleteMany(ns, ["m1", "m2"]);
  await seesOnB("m1", null);

  await until(async () => (await readOnB("streamed")) === null && b.store.cache!.get(ns, "streamed") === null, "node b to keep the miss", 60_000);
  assert.equal(await a.bulk.write(ns, body([{ key: "streamed", value: "bulk" }])), 1);
  await seesOnB("streamed", "bulk");

  // The namespace: renamed and deleted through node a, node b's cached namespace follows.
  assert.equal((await b.store.getNamespace(ACCOUNT, ns))?.title, "shared");
  await a.store.renameNamespace(ACCOUNT, ns, "renamed");
  await until(async () => (await b.store.getNamespace(ACCOUNT, ns))?.title === "renamed", "node b to see the new title", 60_000);
  await a.store.deleteNamespace(ACCOUNT, ns);
  await until(async () => (await b.store.getNamespace(ACCOUNT, ns)) === undefined, "node b to see the namespace gone", 60_000);
  assert.equal(await readOnB("streamed"), null);
});

test("kv.write_batch runs with plan_cache_mode = force_generic_plan (its own setting, not the session's), and writes as before", async (t) => {
  const backend = await open(t);
  if (!backend) return;
  const { pg, ns } = backend;
  // PostgreSQL kept choosing a new custom plan at every call for the namespaces' lock (66 µs a batch, measured with
  // pg_stat_statements.track_planning in bench/scale-out/round-trips.mjs); version 4 makes the function's plans generic.
  const config = await pg.row<{ config: string[] | null }>(
    "SELECT proconfig AS config FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'kv' AND p.proname = 'write_batch'",
  );
  assert.deepEqual(config?.config, ["plan_cache_mode=force_generic_plan"]);
  const session = await pg.checkout();
  try {
    for (let i = 0; i < 8; i++) {
      const { rows } = await session.query<{ missing: string[]; replaced: string[] }>(
        "SELECT missing, replaced FROM kv.write_batch($1::text[], $2::bytea[], $3::bigint[], $4::text[], $5::bytea[], $6, $7::text[])",
        [
          [ns, "no-such-namespace"],
          [Buffer.from(`k${i}`), Buffer.from("k")],
          [null, null],
          [null, null],
          [Buffer.from("v"), Buffer.from("v")],
          "edge_changes",
          [null, null],
        ],
      );
      assert.deepEqual(rows[0], { missing: ["no-such-namespace"], replaced: [] });
    }
    // The setting is the function's own: the session's is as it was.
    assert.equal((await session.query<{ mode: string }>("SELECT current_setting('plan_cache_mode') AS mode")).rows[0]!.mode, "auto");
  } finally {
    session.release();
  }
  assert.equal(Number((await pg.row<{ n: string }>("SELECT count(*) AS n FROM kv.entries WHERE ns_id = $1", [ns]))!.n), 8);
});
