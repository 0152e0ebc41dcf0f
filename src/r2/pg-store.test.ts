import assert from "node:assert/strict";
import { test, type TestContext } from "node:test";
import { Readable } from "node:stream";
import { text } from "node:stream/consumers";
import { S3ContentStore } from "../core/content/s3-store.js";
import { migrateArea } from "../core/db/pg-migrations.js";
import { Postgres } from "../core/db/postgres.js";
import { dependencyRefusal } from "../core/errors/dependency.js";
import { EdgeError } from "../core/errors.js";
import { testContentStore, testPostgres } from "../core/testing/backends.js";
import { R2Codes } from "./errors.js";
import { R2_PG_MIGRATIONS } from "./pg-migrations.js";
import { R2BodyPolicy } from "./objects/body-policy.js";
import { PgR2Store } from "./pg-store.js";
import { describeR2Store } from "./store.contract.js";
import { eventually } from "../core/testing/eventually.js";
import type { BucketRef, R2GetResult, R2ObjectInfo } from "./store.js";

describeR2Store("PostgreSQL + S3", async (t) => {
  const pg = await testPostgres(t, "r2", R2_PG_MIGRATIONS);
  const content = pg && (await testContentStore(t, "r2"));
  return content && { store: { store: new PgR2Store(pg, content), content }, close() {} };
});

const B: BucketRef = { accountId: "acc1", bucketName: "bkt" };

/** Two nodes' stores on one database and one bucket (each its own body cache and leases), with the bucket B. */
async function twoNodes(t: TestContext) {
  const pg = await testPostgres(t, "r2", R2_PG_MIGRATIONS, 12);
  const content = pg && (await testContentStore(t, "r2"));
  if (!pg || !content) return undefined;
  const a = new PgR2Store(pg, content);
  const b = new PgR2Store(pg, content);
  await a.createBucket(B.accountId, B.bucketName);
  return { a, b, pg, content };
}

const strong = (value: string) => ({ type: "strong" as const, value });

const bodyOf = async (r: R2GetResult | undefined) => {
  assert.ok(r && r.body, "expected a body");
  return text(r.body);
};

/** A body whose length is not announced, in two chunks. */
const unannounced = (s: string) => Readable.from([Buffer.from(s.slice(0, 1)), Buffer.from(s.slice(1))]);
/** A small body in the object store rather than in its row: the one part of a multipart upload. */
async function putAsOnePart(store: PgR2Store, key: string, s: string): Promise<void> {
  const upload = await store.createMultipartUpload(B, key);
  const part = await store.uploadPart(B, key, upload, 1, Buffer.from(s));
  await store.completeMultipartUpload(B, key, upload, [part]);
}

test("bodies up to 64 KiB are kept in the object's row, larger ones in the object store; each node reads another's at once", async (t) => {
  const nodes = await twoNodes(t);
  if (!nodes) return;
  const { a, b, pg } = nodes;
  await a.put(B, "at", Buffer.alloc(R2BodyPolicy.rowBytes, "a"));
  await a.put(B, "above", Buffer.alloc(R2BodyPolicy.rowBytes + 1, "b"));
  await a.put(B, "streamed", Readable.from([Buffer.from("announced")]), { size: 9 });
  await a.put(B, "unannounced", unannounced("nobody said how long"));
  await a.put(B, "unannounced-above", unannounced("u".repeat(R2BodyPolicy.rowBytes + 1)));
  const rows = await pg.rows<{ key: string; in_row: boolean; segments: string }>(
    "SELECT key, body IS NOT NULL AS in_row, segments FROM r2.objects ORDER BY key",
  );
  assert.deepEqual(
    rows.map((r) => [r.key, r.in_row, JSON.parse(r.segments).length]),
    [
      ["above", false, 1],
      ["at", true, 0],
      ["streamed", true, 0],
      ["unannounced", true, 0],
      ["unannounced-above", false, 1],
    ],
  );
  assert.equal((await a.liveContent()).size, 2, "two bodies in the object store: the large ones");
  assert.equal(await bodyOf(await b.get(B, "unannounced")), "nobody said how long");
  assert.equal(await bodyOf(await b.get(B, "unannounced-above")), "u".repeat(R2BodyPolicy.rowBytes + 1));
  assert.equal(await bodyOf(await b.get(B, "streamed")), "announced");
  await b.put(B, "streamed", Buffer.from("replaced by b"));
  assert.equal(await bodyOf(await a.get(B, "streamed")), "replaced by b", "node a reads node b's overwrite at once");
  await b.delete(B, "streamed");
  assert.equal(await a.get(B, "streamed"), undefined);
});

test("a small body cached on one node is never served once another node replaced or deleted the object", async (t) => {
  const nodes = await twoNodes(t);
  if (!nodes) return;
  const { a, b } = nodes;
  // The cache holds small bodies of the object store (bodies in rows come with the row).
  await putAsOnePart(a, "hot", "v1");
  assert.equal(await bodyOf(await a.get(B, "hot")), "v1");
  const cached = (await a.get(B, "hot"))!;
  assert.ok("bytes" in cached && cached.bytes, "node a serves the second read from memory");
  await putAsOnePart(b, "hot", "v2");
  const fresh = (await a.get(B, "hot"))!;
  assert.ok(!("bytes" in fresh && fresh.bytes), "the new version is not in node a's memory");
  assert.equal(await bodyOf(fresh), "v2");
  await b.delete(B, "hot");
  assert.equal(await a.get(B, "hot"), undefined);
});

test("conditional creates of one key through two nodes at once: exactly one is stored", async (t) => {
  const nodes = await twoNodes(t);
  if (!nodes) return;
  const { a, b, pg } = nodes;
  // Bodies in the object store, to see that the losers' are removed. The writers' commits are held back behind a lock on the bucket's row, then let go together: without the
  // per-key lock each would find the key free and all of them would be stored.
  const holder = await pg.checkout();
  const onlyIf = { etagDoesNotMatch: [{ type: "wildcard" as const }] };
  let writers: Promise<unknown>[];
  try {
    await holder.query("BEGIN");
    await holder.query("SELECT id FROM r2.buckets WHERE name = $1 FOR UPDATE", [B.bucketName]);
    writers = Array.from({ length: 8 }, (_, i) => (i % 2 ? a : b).put(B, "once", Buffer.alloc(R2BodyPolicy.rowBytes + 1, i), { onlyIf }));
    const waiting = async () => Number((await pg.row<{ n: string }>("SELECT count(*) AS n FROM pg_locks WHERE NOT granted"))!.n);
    await eventually(async () => (await waiting()) === 8, "every writer to wait at its commit", 60_000);
  } finally {
    await holder.query("ROLLBACK");
    holder.release();
  }
  const stored = (await Promise.all(writers)).filter((r): r is R2ObjectInfo => r !== undefined);
  assert.equal(stored.length, 1, "one writer won, the others found the key taken");
  assert.equal((await b.head(B, "once"))!.etag, stored[0].etag);
  assert.equal((await a.liveContent()).size, 1, "the losers' bodies are not kept");
});

test("a reader on one node gets the old body whole while another node overwrites the object", async (t) => {
  const nodes = await twoNodes(t);
  if (!nodes) return;
  const { a, b } = nodes;
  const first = Buffer.alloc(6 * 1024 * 1024, "1");
  await a.put(B, "big", first);
  const reading = (await a.get(B, "big"))!.body!;
  const firstChunk = await new Promise<Buffer>((resolve, reject) => {
    reading.once("error", reject);
    reading.once("data", (c: Buffer) => (reading.pause(), resolve(c)));
  });
  await b.put(B, "big", Buffer.from("second"));
  const whole = Buffer.concat([firstChunk, ...(await reading.toArray())]);
  assert.ok(whole.equals(first), "the reader got the old bytes whole");
  assert.equal(await bodyOf(await a.get(B, "big")), "second");
});

test("keys and listing bounds holding U+0000 are refused with a 400; nothing is stored", async (t) => {
  const nodes = await twoNodes(t);
  if (!nodes) return;
  const { a, content } = nodes;
  const invalidKey = (e: unknown) => e instanceof EdgeError && e.status === 400 && e.errors[0].code === R2Codes.invalidObjectName;
  await assert.rejects(a.put(B, "nul\u0000key", Buffer.from("x")), invalidKey);
  await assert.rejects(a.get(B, "nul\u0000key"), invalidKey);
  await assert.rejects(a.list(B, { prefix: "a\u0000" }), invalidKey);
  await assert.rejects(a.createMultipartUpload(B, "\u0000"), invalidKey);
  assert.deepEqual((await a.list(B)).objects, []);
  assert.equal(await content.gc(() => false, 0), 0, "no body was written");
});

test("PostgreSQL or the object store unreachable: the store's errors are the core 503 naming it, and nothing is stored", async (t) => {
  const nodes = await twoNodes(t);
  if (!nodes) return;
  const { pg } = nodes;
  const unreachablePg = new Postgres({ url: "postgres://nobody@127.0.0.1:1/none", poolSize: 2, connectTimeoutMs: 1_000 });
  t.after(() => unreachablePg.close());
  const noDatabase = new PgR2Store(unreachablePg, nodes.content);
  const refusal = (dependency: string) => (e: unknown) => {
    const r = dependencyRefusal(e);
    assert.ok(r, `expected a dependency error, got ${String(e)}`);
    assert.equal(r.status, 503);
    assert.match(r.errors[0].message, new RegExp(`^${dependency} is unreachable`));
    return true;
  };
  await assert.rejects(noDatabase.head(B, "k"), refusal("PostgreSQL"));
  await assert.rejects(noDatabase.listBuckets(B.accountId), refusal("PostgreSQL"));

  const { S3Client } = await import("@aws-sdk/client-s3");
  const client = new S3Client({
    endpoint: "http://127.0.0.1:1",
    region: "us-east-1",
    forcePathStyle: true,
    maxAttempts: 1,
    credentials: { accessKeyId: "x", secretAccessKey: "y" },
  });
  t.after(() => client.destroy());
  const noObjectStore = new PgR2Store(pg, new S3ContentStore(client, "nowhere", "r2/"));
  const large = Buffer.alloc(R2BodyPolicy.rowBytes + 1, "l");
  await assert.rejects(noObjectStore.put(B, "k", large), refusal("object store"));
  await assert.rejects(noObjectStore.put(B, "k", large, { onlyIf: { etagDoesNotMatch: [{ type: "wildcard" }] } }), refusal("object store"));
  assert.equal(await noObjectStore.head(B, "k"), undefined, "no row without its body");
  // A small body needs PostgreSQL only: written, overwritten and read while the object store is away.
  await noObjectStore.put(B, "small", Buffer.from("in the row"));
  assert.ok(await noObjectStore.put(B, "small", Buffer.from("again"), { onlyIf: { etagDoesNotMatch: [strong("x")] } }));
  assert.equal(await bodyOf(await noObjectStore.get(B, "small")), "again");
  await noObjectStore.delete(B, "small");
});

test("the usage migrations (versions 5 to 7) count the objects and uploads a database already holds, once", async (t) => {
  const pg = await testPostgres(t, "r2", R2_PG_MIGRATIONS.slice(0, 4));
  const content = pg && (await testContentStore(t, "r2"));
  if (!pg || !content) return;
  await pg.execute(
    "INSERT INTO r2.buckets (id, account_id, name, created_at, location, storage_class) VALUES (1, 'acc1', 'full', '', 'auto', 'Standard'), (2, 'acc1', 'none', '', 'auto', 'Standard')",
  );
  await pg.execute(
    `INSERT INTO r2.objects (bucket_id, key, version, size, etag, uploaded, http, custom, checksums, storage_class, segments)
     VALUES (1, 'a', 'v', 10, 'e', 0, '{}', '{"k":"v"}', '{}', 'Standard', '[]'), (1, 'b', 'v', 32, 'e', 0, '{}', '{}', '{}', 'Standard', '[]')`,
  );
  await pg.execute("INSERT INTO r2.uploads (upload_id, bucket_id, key, http, custom, storage_class, created) VALUES ('u1', 1, 'm', '{}', '{}', 'Standard', 0)");
  assert.equal(await migrateArea(pg, "r2", R2_PG_MIGRATIONS), R2_PG_MIGRATIONS.length - 4);
  const usage = (await new PgR2Store(pg, content).bucketUsage("acc1")).map((u) => [u.bucketName, u.objectCount, u.payloadSize, u.metadataSize, u.uploadCount]);
  assert.deepEqual(usage, [
    ["full", 2, 42, 2 + 9 + 2 + 2, 1],
    ["none", 0, 0, 0, 0],
  ]);
});

test("concurrent writes into one bucket count right across the usage stripes of their sessions; a bucket's deletion takes its stripes", async (t) => {
  const nodes = await twoNodes(t);
  if (!nodes) return;
  const { a, b, pg } = nodes;
  // Two stores on a pool of 12 sessions, 60 writes at once: puts, overwrites with another size, deletes.
  await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).put(B, `k${i}`, Buffer.alloc(10 + i, "x"))));
  await Promise.all([
    ...Array.from({ length: 10 }, (_, i) => (i % 2 ? b : a).put(B, `k${i}`, Buffer.alloc(100, "y"))),
    ...Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).delete(B, `k${30 + i}`)),
  ]);
  const [usage] = await a.bucketUsage(B.accountId, B.bucketName);
  const actual = await pg.row<{ count: string; bytes: string }>("SELECT count(*) AS count, sum(size) AS bytes FROM r2.objects");
  assert.equal(usage!.objectCount, 30);
  assert.equal(usage!.objectCount, Number(actual!.count));
  assert.equal(usage!.payloadSize, Number(actual!.bytes));
  const stripes = await pg.row<{ n: string }>("SELECT count(*) AS n FROM r2.bucket_usage");
  assert.ok(Number(stripes!.n) > 1, `the writes went to ${stripes!.n} stripe row(s)`);
  await a.delete(
    B,
    Array.from({ length: 30 }, (_, i) => `k${i}`),
  );
  assert.deepEqual(
    (await a.bucketUsage(B.accountId, B.bucketName)).map((u) => [u.objectCount, u.payloadSize, u.metadataSize]),
    [[0, 0, 0]],
  );
  await a.deleteBucket(B.accountId, B.bucketName);
  assert.equal((await pg.row<{ n: string }>("SELECT count(*) AS n FROM r2.bucket_usage"))!.n, "0");
});

test("a write that changes no count writes no usage row; one that does counts through a plan its session keeps", async (t) => {
  const nodes = await twoNodes(t);
  if (!nodes) return;
  const { a, pg } = nodes;
  const stripes = () => pg.rows<{ stripe: number; xmin: string }>("SELECT stripe, xmin::text AS xmin FROM r2.bucket_usage ORDER BY stripe");
  await a.put(B, "same", Buffer.alloc(512, "a"), { httpMetadata: { contentType: "text/plain" } });
  const before = await stripes();
  // The same size and metadata size: nothing counted changes, so no stripe row is written (nor made).
  for (let i = 0; i < 4; i++) await a.put(B, "same", Buffer.alloc(512, String(i)), { httpMetadata: { contentType: "text/plain" } });
  assert.deepEqual(await stripes(), before, "an overwrite that changes no count left the usage rows untouched");
  await a.put(B, "same", Buffer.alloc(600, "b"), { httpMetadata: { contentType: "text/plain" } });
  assert.deepEqual(
    (await a.bucketUsage(B.accountId, B.bucketName)).map((u) => [u.objectCount, u.payloadSize]),
    [[1, 600]],
  );

  // The usage write's plan is made once a session and kept (PL/pgSQL), not parsed and planned at every object write
  // (a LANGUAGE sql function's plan lasts one call: 70 µs of PostgreSQL's CPU on each small PUT).
  const session = await pg.checkout();
  try {
    for (let size = 1; size <= 3; size++) {
      await session.query(
        `INSERT INTO r2.objects (bucket_id, key, version, size, etag, uploaded, http, custom, checksums, storage_class, segments)
         SELECT id, 'direct', 'v', $1, 'e', 0, '{}', '{}', '{}', 'Standard', '[]' FROM r2.buckets WHERE name = $2
         ON CONFLICT (bucket_id, key) DO UPDATE SET size = excluded.size`,
        [size * 100, B.bucketName],
      );
    }
    const { rows } = await session.query<{ n: string }>(
      "SELECT count(*) AS n FROM pg_backend_memory_contexts WHERE name = 'CachedPlanSource' AND ident LIKE 'INSERT INTO r2.bucket_usage AS u %'",
    );
    assert.equal(rows[0]!.n, "1", "the session keeps one prepared plan of the usage write");
  } finally {
    session.release();
  }
  assert.deepEqual(
    (await a.bucketUsage(B.accountId, B.bucketName)).map((u) => [u.objectCount, u.payloadSize]),
    [[2, 900]],
  );
});
