import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FileContentStore } from "../core/content/file-store.js";
import { openDatabase, type Db } from "../core/db/sqlite.js";
import { r2Migrations, SqliteR2Store } from "./sqlite-store.js";
import { R2Codes, R2Error, type BucketRef } from "./store.js";

/** ListMultipartUploads and ListParts through the R2Store interface, on SQLite. */
let dir: string;
let db: Db;
let store: SqliteR2Store;
const B: BucketRef = { accountId: "acc1", bucketName: "uploads" };
const OTHER: BucketRef = { accountId: "acc2", bucketName: "uploads" };

before(async () => {
  dir = mkdtempSync(join(tmpdir(), "r2-uploads-"));
  db = openDatabase(join(dir, "r2.sqlite"), r2Migrations);
  store = new SqliteR2Store(db, new FileContentStore(join(dir, "content")));
  await store.createBucket(B.accountId, B.bucketName);
  await store.createBucket(OTHER.accountId, OTHER.bucketName);
});
after(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

test("uploads listed by key then upload id, grouped by delimiter, paged with markers; other accounts unseen", async () => {
  const keys = ["a/1", "a/2", "b", "b", "c/x/1", "d"];
  const made: { key: string; id: string }[] = [];
  for (const key of keys) made.push({ key, id: await store.createMultipartUpload(B, key) });
  await store.createMultipartUpload(OTHER, "a/1");
  const bIds = made.filter((m) => m.key === "b").map((m) => m.id);
  bIds.sort();

  const all = await store.listMultipartUploads(B);
  assert.deepEqual(
    all.uploads.map((u) => u.key),
    ["a/1", "a/2", "b", "b", "c/x/1", "d"],
  );
  assert.deepEqual(
    all.uploads.filter((u) => u.key === "b").map((u) => u.uploadId),
    bIds,
  );
  assert.equal(all.truncated, false);
  assert.ok(all.uploads.every((u) => u.storageClass === "Standard" && u.initiated > 0));

  const grouped = await store.listMultipartUploads(B, { delimiter: "/" });
  assert.deepEqual(grouped.delimitedPrefixes, ["a/", "c/"]);
  assert.deepEqual(
    grouped.uploads.map((u) => u.key),
    ["b", "b", "d"],
  );

  const prefixed = await store.listMultipartUploads(B, { prefix: "c/", delimiter: "/" });
  assert.deepEqual(prefixed.delimitedPrefixes, ["c/x/"]);
  assert.deepEqual(prefixed.uploads, []);

  // Pages of two, with a delimiter: each item once, the next page starting from the markers.
  const seen: string[] = [];
  let page = await store.listMultipartUploads(B, { delimiter: "/", limit: 2 });
  for (;;) {
    seen.push(...page.delimitedPrefixes, ...page.uploads.map((u) => `${u.key}#${u.uploadId}`));
    if (!page.truncated) break;
    assert.ok(page.nextKeyMarker);
    page = await store.listMultipartUploads(B, { delimiter: "/", limit: 2, keyMarker: page.nextKeyMarker, uploadIdMarker: page.nextUploadIdMarker });
  }
  assert.deepEqual(seen.sort(), ["a/", "c/", `b#${bIds[0]}`, `b#${bIds[1]}`, `d#${made[5].id}`].sort());

  // key-marker alone skips every upload of that key.
  const afterB = await store.listMultipartUploads(B, { keyMarker: "b" });
  assert.deepEqual(
    afterB.uploads.map((u) => u.key),
    ["c/x/1", "d"],
  );
  const afterFirstB = await store.listMultipartUploads(B, { keyMarker: "b", uploadIdMarker: bIds[0] });
  assert.deepEqual(
    afterFirstB.uploads.map((u) => u.uploadId),
    [bIds[1], made[4].id, made[5].id],
  );

  await assert.rejects(store.listMultipartUploads(B, { limit: 0 }), (e: unknown) => e instanceof R2Error && e.v4code === R2Codes.invalidMaxKeys);
  await assert.rejects(store.listMultipartUploads({ accountId: "acc3", bucketName: "uploads" }), (e: unknown) => e instanceof R2Error && e.status === 404);

  for (const m of made) await store.abortMultipartUpload(B, m.key, m.id);
  assert.deepEqual((await store.listMultipartUploads(B)).uploads, []);
});

test("parts listed by number with their size, md5 etag and upload time; paged; unknown upload is 404", async () => {
  const id = await store.createMultipartUpload(B, "parts.bin", { storageClass: "InfrequentAccess" });
  const before = Date.now();
  for (const n of [3, 1, 2]) await store.uploadPart(B, "parts.bin", id, n, Buffer.from(`part ${n}`));
  const listed = await store.listParts(B, "parts.bin", id);
  assert.deepEqual(
    listed.parts.map((p) => [p.partNumber, p.size]),
    [
      [1, 6],
      [2, 6],
      [3, 6],
    ],
  );
  assert.match(listed.parts[0].etag, /^[0-9a-f]{32}$/);
  assert.ok(listed.parts.every((p) => p.uploaded >= before - 1000));
  assert.equal(listed.storageClass, "InfrequentAccess");
  assert.equal(listed.truncated, false);

  const first = await store.listParts(B, "parts.bin", id, { limit: 2 });
  assert.deepEqual(
    first.parts.map((p) => p.partNumber),
    [1, 2],
  );
  assert.equal(first.truncated, true);
  assert.equal(first.nextPartNumberMarker, 2);
  const rest = await store.listParts(B, "parts.bin", id, { partNumberMarker: 2 });
  assert.deepEqual(
    rest.parts.map((p) => p.partNumber),
    [3],
  );

  await assert.rejects(store.listParts(B, "other-key", id), (e: unknown) => e instanceof R2Error && e.v4code === R2Codes.noSuchUpload);
  await assert.rejects(store.listParts(OTHER, "parts.bin", id), (e: unknown) => e instanceof R2Error && e.v4code === R2Codes.noSuchUpload);
  await store.abortMultipartUpload(B, "parts.bin", id);
  await assert.rejects(store.listParts(B, "parts.bin", id), (e: unknown) => e instanceof R2Error && e.v4code === R2Codes.noSuchUpload);
});
