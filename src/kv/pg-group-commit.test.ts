import assert from "node:assert/strict";
import { test, type TestContext } from "node:test";
import pg from "pg";
import { migrateArea } from "../core/db/pg-migrations.js";
import { Postgres } from "../core/db/postgres.js";
import type { EdgeError } from "../core/errors.js";
import { dependencyRefusal } from "../core/errors/dependency.js";
import { testContentStore } from "../core/testing/backends.js";
import { until } from "../core/testing/cluster-load.js";
import { privatePostgres, testDatabase } from "../core/testing/services.js";
import { KvCodes } from "./errors.js";
import { KV_PG_MIGRATIONS } from "./pg-migrations.js";
import { PgKvStore } from "./pg-store.js";

// The group commit of single KV writes on PostgreSQL (PgKvStore.smallWrites): concurrent writes share one commit,
// each is answered only once that commit is durable, and a failure is confined to the write at fault. To make the
// batches deterministic, a test holds the namespace row FOR UPDATE on a connection of its own: the first commit then
// waits for that lock (its kv.write_batch takes the namespace FOR KEY SHARE) while every other write queues behind it.

const ACCOUNT = "c".repeat(32);
const GONE_NAMESPACE = "0".repeat(32);

/** A connection of the test's own that holds namespace `ns` locked until `release()`. */
async function holdNamespace(url: string, ns: string): Promise<{ client: pg.Client; release(): Promise<void> }> {
  const client = new pg.Client({ connectionString: url });
  client.on("error", () => {});
  await client.connect();
  await client.query("BEGIN");
  await client.query("SELECT 1 FROM kv.namespaces WHERE id = $1 FOR UPDATE", [ns]);
  return {
    client,
    release: async () => {
      await client.query("COMMIT");
      await client.end();
    },
  };
}

/** Resolves once some statement of the database waits for a lock (the first commit, behind the test's lock). */
const commitWaiting = (observer: Postgres) =>
  until(
    async () =>
      Number(
        (await observer.row<{ n: string }>("SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"))!.n,
      ) > 0,
    "the first commit to wait for the namespace lock",
    60_000,
  );

/** Each write's promise, and whether it has settled. */
function track(promises: readonly Promise<void>[]) {
  const settled = promises.map(() => false);
  const outcomes = promises.map((p, i) =>
    p.then(
      () => ((settled[i] = true), undefined),
      (err: unknown) => ((settled[i] = true), err),
    ),
  );
  return { settled, outcomes: Promise.all(outcomes) };
}

async function open(t: TestContext, groupCommit?: { maxItems: number; maxBytes: number }) {
  const database = await testDatabase(t);
  const content = database && (await testContentStore(t, "kv"));
  if (!database || !content) return undefined;
  const db = new Postgres({ url: database.url, poolSize: 4 });
  t.after(() => db.close());
  await migrateArea(db, "kv", KV_PG_MIGRATIONS);
  const store = new PgKvStore(db, content, { groupCommit });
  const ns = (await store.createNamespace(ACCOUNT, "group")).id;
  // The test's own view of the rows, never through the store.
  const valueOf = async (key: string) =>
    (await db.row<{ value: Buffer }>("SELECT value FROM kv.entries WHERE ns_id = $1 AND key = $2", [ns, Buffer.from(key)]))?.value.toString() ?? null;
  const transactions = async () => Number((await db.row<{ n: string }>("SELECT count(DISTINCT xmin::text) AS n FROM kv.entries WHERE ns_id = $1", [ns]))!.n);
  return { db, store, ns, valueOf, transactions, url: database.url };
}

test("concurrent writes share one commit, are answered only after it, and leave the last write of each key", async (t) => {
  const b = await open(t);
  if (!b) return;
  await b.store.put(b.ns, "same", Buffer.from("before"));
  const lock = await holdNamespace(b.url, b.ns);
  const writes: Promise<void>[] = [];
  // 150 distinct keys, and 50 writes of one key interleaved with them.
  for (let i = 0; i < 200; i++) {
    writes.push(i % 4 === 3 ? b.store.put(b.ns, "same", Buffer.from(`same-${i}`)) : b.store.put(b.ns, `d${i}`, Buffer.from(`v${i}`), { metadata: { i } }));
  }
  // A write into a namespace deleted meanwhile, in the same batch: its 404 is its own.
  writes.push(b.store.put(GONE_NAMESPACE, "k", Buffer.from("v")));
  const { settled, outcomes } = track(writes);
  await commitWaiting(b.db);
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(settled.filter(Boolean).length, 0, "no write is answered while its commit waits");
  assert.equal(await b.valueOf("d0"), null, "nothing is visible before the commit");
  await lock.release();

  const results = await outcomes;
  assert.deepEqual(results.slice(0, 200), Array(200).fill(undefined));
  assert.equal((results[200] as EdgeError).status, 404);
  assert.equal((results[200] as EdgeError).errors[0]!.code, KvCodes.namespaceNotFound);
  for (let i = 0; i < 200; i++) if (i % 4 !== 3) assert.equal(await b.valueOf(`d${i}`), `v${i}`);
  assert.equal(await b.valueOf("same"), "same-199", "the last write of a key wins, as in arrival order");
  assert.deepEqual((await b.store.get(b.ns, "d8"))?.metadata, { i: 8 });
  // The first write went alone (nothing was in flight), the other 200 waited for it and went together.
  assert.equal(await b.transactions(), 2, "200 writes in two transactions");
  assert.deepEqual(b.store.smallWrites.stats, { writes: 202, commits: 3, retriedAlone: 0 });
});

test("a group commit carries at most its limits: so many writes, so many bytes", async (t) => {
  const b = await open(t, { maxItems: 16, maxBytes: 4096 });
  if (!b) return;
  const blocked = async (n: number, valueBytes: number) => {
    const lock = await holdNamespace(b.url, b.ns);
    const { outcomes } = track(Array.from({ length: n }, (_, i) => b.store.put(b.ns, `${valueBytes}-${i}`, Buffer.alloc(valueBytes, "v"))));
    await commitWaiting(b.db);
    await lock.release();
    assert.deepEqual(await outcomes, Array(n).fill(undefined));
  };
  // 1 alone, then 39 small writes in commits of at most 16: 1 + 16 + 16 + 7.
  await blocked(40, 10);
  assert.equal(await b.transactions(), 4);
  // 1 alone, then 39 writes of 1 KiB in commits of at most 4 KiB (3 writes each): 1 + 13.
  await blocked(40, 1024);
  assert.equal(await b.transactions(), 4 + 14);
});

test("in a group commit, a write the database refuses and a write into a deleted namespace fail alone", async (t) => {
  const b = await open(t);
  if (!b) return;
  // A row-level refusal PostgreSQL makes, as a constraint would: the test's own trigger refuses key "poison".
  await b.db.execute(`CREATE FUNCTION kv.test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN IF NEW.key = 'poison'::bytea THEN RAISE EXCEPTION 'refused by the test' USING ERRCODE = '23514'; END IF; RETURN NEW; END $$`);
  await b.db.execute("CREATE TRIGGER test_refuse BEFORE INSERT OR UPDATE ON kv.entries FOR EACH ROW EXECUTE FUNCTION kv.test_refuse()");
  const lock = await holdNamespace(b.url, b.ns);
  const keys = ["first", "a", "poison", "b", "gone", "c"];
  const writes = keys.map((k) => b.store.put(k === "gone" ? GONE_NAMESPACE : b.ns, k, Buffer.from(`value-${k}`)));
  const { outcomes } = track(writes);
  await commitWaiting(b.db);
  await lock.release();

  const results = await outcomes;
  const failed = (i: number) => results[i] as EdgeError & { code?: string };
  assert.equal(failed(2).code, "23514", "the refused write carries PostgreSQL's refusal");
  assert.equal(failed(4).status, 404);
  assert.equal(failed(4).errors[0]!.code, KvCodes.namespaceNotFound);
  for (const i of [0, 1, 3, 5]) assert.equal(results[i], undefined, `${keys[i]} was written`);
  for (const k of ["first", "a", "b", "c"]) assert.equal(await b.valueOf(k), `value-${k}`);
  assert.equal(await b.valueOf("poison"), null);
  // The batch of five failed whole (nothing of it written) and was committed again one write at a time.
  assert.equal(b.store.smallWrites.stats.retriedAlone, 5);
});

test("PostgreSQL stopped while a group commit waits: every write of it and of the queue gets a 503, none is written, and writes work again once it is back", async (t) => {
  const server = await privatePostgres(t);
  const content = server && (await testContentStore(t, "kv"));
  if (!server || !content) return;
  const db = new Postgres({ url: server.url, poolSize: 2, connectTimeoutMs: 1000 });
  t.after(() => db.close());
  await migrateArea(db, "kv", KV_PG_MIGRATIONS);
  const store = new PgKvStore(db, content);
  const ns = (await store.createNamespace(ACCOUNT, "outage")).id;
  const lock = await holdNamespace(server.url, ns);
  const { outcomes } = track(Array.from({ length: 100 }, (_, i) => store.put(ns, `k${i}`, Buffer.from(`v${i}`))));
  await commitWaiting(db);
  server.stop({ immediate: true });

  const results = await outcomes;
  for (const err of results) assert.equal(dependencyRefusal(err)?.status, 503, String(err));
  await server.start();
  const count = async () => Number((await db.row<{ n: string }>("SELECT count(*) AS n FROM kv.entries WHERE ns_id = $1", [ns]))!.n);
  await until(async () => (await count().catch(() => -1)) >= 0, "PostgreSQL to answer again", 60_000);
  assert.equal(await count(), 0, "no write of the failed commits was kept");
  await store.put(ns, "after", Buffer.from("back"));
  assert.equal((await store.get(ns, "after"))?.value.toString(), "back");
});
