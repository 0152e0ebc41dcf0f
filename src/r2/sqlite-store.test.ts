import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { Readable } from "node:stream";
import { text } from "node:stream/consumers";
import { DbSmallContentStore } from "../core/content/db-small-store.js";
import { FileContentStore } from "../core/content/file-store.js";
import { sqliteStoreFactory } from "../core/testing/contract.js";
import { openDatabase } from "../core/db/sqlite.js";
import { eventually } from "../core/testing/eventually.js";
import { withTempDir } from "../core/testing/temp-dir.js";
import { R2_SMALL_BODIES, r2Migrations } from "./sqlite-migrations.js";
import { R2_PAGE_CACHE_KIB, SqliteR2Store } from "./sqlite-store.js";
import { describeR2Store } from "./store.contract.js";
import type { BucketRef, R2GetResult } from "./store.js";

/** A fresh SQLite store with its bytes in a file content store; `contentDir` lets the tests below look at the files. */
const openSqlite = sqliteStoreFactory(r2Migrations, (db, dir) => {
  const contentDir = join(dir, "content");
  const content = new FileContentStore(contentDir);
  return { store: new SqliteR2Store(db, content), content, contentDir };
});

describeR2Store("SQLite, every body in a file", openSqlite);
// As `edgecli serve` runs it: bodies up to 64 KiB in r2.sqlite, larger ones in files.
describeR2Store(
  "SQLite, small bodies in the database",
  sqliteStoreFactory(r2Migrations, (db, dir) => {
    const content = new DbSmallContentStore(db, R2_SMALL_BODIES, new FileContentStore(join(dir, "content")));
    return { store: new SqliteR2Store(db, content), content };
  }),
);

const B: BucketRef = { accountId: "acc1", bucketName: "bkt" };

async function withStore(body: (s: { store: SqliteR2Store; contentDir: string }) => Promise<void>): Promise<void> {
  const { store, close } = await openSqlite();
  try {
    await store.store.createBucket(B.accountId, B.bucketName);
    await body(store);
  } finally {
    await close();
  }
}

const bodyOf = async (r: R2GetResult | undefined) => {
  assert.ok(r && r.body, "expected a body");
  return text(r.body);
};

/** The content files on disk, by id (the tmp folder holds uploads in progress). */
const contentFiles = (contentDir: string) =>
  readdirSync(contentDir)
    .filter((d) => d !== "tmp")
    .flatMap((d) => readdirSync(join(contentDir, d)))
    .sort();

test("an overwrite removes the old bytes once the last reader of them is done", () =>
  withStore(async ({ store, contentDir }) => {
    // Larger than the read buffers, so the paused reader below still holds its file open (a small file is read
    // whole and closed at once, which is when its lease ends).
    const first = Buffer.alloc(4 * 1024 * 1024, "1");
    await store.put(B, "ow", first);
    const before = contentFiles(contentDir);
    const reading = (await store.get(B, "ow"))!.body!;
    const firstChunk = await new Promise<Buffer>((resolve) => reading.once("data", (c: Buffer) => (reading.pause(), resolve(c))));
    await store.put(B, "ow", Buffer.from("second"));
    assert.equal(contentFiles(contentDir).length, before.length + 1, "the old file stays while it is read");
    const rest = Buffer.concat([firstChunk, ...(await reading.toArray())]);
    assert.ok(rest.equals(first), "the reader got the old bytes whole");
    await eventually(() => contentFiles(contentDir).length === before.length, "the old content file to go once its reader closed");
    assert.deepEqual(contentFiles(contentDir), [...(await store.liveContent())].sort());
  }));

test("small objects read again come from memory, and never stale", () =>
  withStore(async ({ store }) => {
    await store.put(B, "hot", Buffer.from("hot bytes v1"));
    assert.equal(await bodyOf(await store.get(B, "hot")), "hot bytes v1");
    const again = (await store.get(B, "hot"))!;
    assert.ok("bytes" in again && again.bytes, "the second read is served from memory");
    assert.equal(await bodyOf(again), "hot bytes v1");
    const ranged = (await store.get(B, "hot", { range: { offset: 4, length: 5 } }))!;
    assert.equal(await bodyOf(ranged), "bytes");
    await store.put(B, "hot", Buffer.from("hot bytes v2"));
    const fresh = (await store.get(B, "hot"))!;
    assert.ok(!("bytes" in fresh && fresh.bytes), "a new version is read from its own file");
    assert.equal(await bodyOf(fresh), "hot bytes v2");
    await store.delete(B, "hot");
    assert.equal(await store.get(B, "hot"), undefined);
  }));

test("with small bodies in r2.sqlite, every read of one is served whole from its row and no copy is kept; the page cache is bounded", async () => {
  const open = sqliteStoreFactory(r2Migrations, (db, dir) => ({
    db,
    store: new SqliteR2Store(db, new DbSmallContentStore(db, R2_SMALL_BODIES, new FileContentStore(join(dir, "content")))),
  }));
  const {
    store: { store, db },
    close,
  } = await open();
  try {
    assert.equal(db.pragma("cache_size", { simple: true }), -R2_PAGE_CACHE_KIB);
    await store.createBucket(B.accountId, B.bucketName);
    await store.put(B, "row", Buffer.from("bytes in a row"));
    const first = (await store.get(B, "row"))!;
    assert.ok("bytes" in first && first.bytes, "the first read already has the bytes, without a stream");
    assert.equal(await bodyOf(first), "bytes in a row");
    const ranged = (await store.get(B, "row", { range: { offset: 6, length: 2 } }))!;
    assert.ok("bytes" in ranged && ranged.bytes?.toString() === "in");
    // Nothing but the row holds the bytes: once it is gone (behind the store's back), no read can serve them.
    db.prepare(`DELETE FROM ${R2_SMALL_BODIES}`).run();
    const gone = (await store.get(B, "row"))!;
    assert.ok(!("bytes" in gone && gone.bytes), "no copy served from memory");
    await assert.rejects(bodyOf(gone), { code: "ENOENT" });
  } finally {
    await close();
  }
});

test("concurrent overwrites, deletes and refused writes leave exactly the content files the rows refer to", () =>
  withStore(async ({ store, contentDir }) => {
    const writers = Array.from({ length: 24 }, (_, i) =>
      store.put(B, `k${i % 3}`, Readable.from([Buffer.from(`writer ${i} `), Buffer.from("x".repeat(i * 100))])),
    );
    const deleters = [store.delete(B, "k2"), store.delete(B, ["k1", "k2"])];
    const refused = [
      store.put(B, "sized", Readable.from([Buffer.from("abc")]), { size: 4 }),
      store.put(B, "digest", Buffer.from("abc"), { md5: "0".repeat(32) }),
      store.put(B, "k0", Buffer.from("late"), { onlyIf: { etagMatches: [{ type: "strong", value: "nope" }] } }),
    ];
    await Promise.all([...writers, ...deleters, ...refused.map((p) => p.catch(() => undefined))]);
    const id = await store.createMultipartUpload(B, "parts");
    await store.uploadPart(B, "parts", id, 1, Buffer.from("one"));
    await store.uploadPart(B, "parts", id, 1, Buffer.from("one again"));
    const live = [...(await store.liveContent())].sort();
    await eventually(() => contentFiles(contentDir).join() === live.join(), "the replaced content files to be unlinked");
    assert.deepEqual(readdirSync(join(contentDir, "tmp")), [], "no temporary files left behind");
    await store.abortMultipartUpload(B, "parts", id);
    await eventually(() => contentFiles(contentDir).length === live.length - 1, "the aborted upload's part to be unlinked");
  }));

test("the usage migration counts the objects and uploads a database already holds, once", async () => {
  await withTempDir("r2-usage-migration-", async (dir) => {
    const file = join(dir, "r2.sqlite");
    const before = openDatabase(file, r2Migrations.slice(0, -1));
    const now = Date.now();
    before.prepare("INSERT INTO buckets (id, account_id, name, created_at, location, storage_class) VALUES (1, 'acc1', 'full', '', 'auto', 'Standard')").run();
    before.prepare("INSERT INTO buckets (id, account_id, name, created_at, location, storage_class) VALUES (2, 'acc1', 'none', '', 'auto', 'Standard')").run();
    const insert = before.prepare(
      "INSERT INTO objects (bucket_id, key, version, size, etag, uploaded, http, custom, checksums, storage_class, segments) VALUES (1, ?, 'v', ?, 'e', ?, '{}', ?, '{}', 'Standard', '[]')",
    );
    insert.run("a", 10, now, '{"k":"v"}');
    insert.run("b", 32, now, "{}");
    before
      .prepare("INSERT INTO uploads (upload_id, bucket_id, key, http, custom, storage_class, created) VALUES ('u1', 1, 'm', '{}', '{}', 'Standard', ?)")
      .run(now);
    before.close();

    const db = openDatabase(file, r2Migrations);
    try {
      const store = new SqliteR2Store(db, new FileContentStore(join(dir, "content")));
      const usage = (await store.bucketUsage("acc1")).map((u) => [u.bucketName, u.objectCount, u.payloadSize, u.metadataSize, u.uploadCount]);
      assert.deepEqual(usage, [
        ["full", 2, 42, 2 + 9 + 2 + 2, 1],
        ["none", 0, 0, 0, 0],
      ]);
    } finally {
      db.close();
    }
  });
});
