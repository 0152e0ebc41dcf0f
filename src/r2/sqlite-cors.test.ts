import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FileContentStore } from "../core/content/file-store.js";
import { openDatabase, type Db } from "../core/db/sqlite.js";
import { r2Migrations, SqliteR2Store } from "./sqlite-store.js";
import { R2Codes, R2Error, type BucketRef, type R2CorsRule } from "./store.js";

/** Bucket CORS rules through the R2Store interface, on SQLite. */
let dir: string;
let db: Db;
let store: SqliteR2Store;
const A: BucketRef = { accountId: "acc-a", bucketName: "shared-name" };
const B: BucketRef = { accountId: "acc-b", bucketName: "shared-name" };
const RULE: R2CorsRule = {
  allowedOrigins: ["https://app.example"],
  allowedMethods: ["GET", "PUT"],
  allowedHeaders: ["*"],
  exposeHeaders: ["ETag"],
  maxAgeSeconds: 600,
};

before(async () => {
  dir = mkdtempSync(join(tmpdir(), "r2-cors-"));
  db = openDatabase(join(dir, "r2.sqlite"), r2Migrations);
  store = new SqliteR2Store(db, new FileContentStore(join(dir, "content")));
  await store.createBucket(A.accountId, A.bucketName);
  await store.createBucket(B.accountId, B.bucketName);
});
after(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

test("CORS rules: set, read, replace, delete, per bucket of each account; gone with the bucket", async () => {
  assert.equal(await store.getBucketCors(A), undefined);
  await store.putBucketCors(A, [RULE]);
  assert.deepEqual(await store.getBucketCors(A), [RULE]);
  assert.equal(await store.getBucketCors(B), undefined, "the same name in another account has its own rules");
  assert.deepEqual(await store.corsRulesByBucketName("shared-name"), [{ accountId: "acc-a", rules: [RULE] }]);

  const other = { ...RULE, allowedOrigins: ["*"], allowedMethods: ["HEAD"] };
  await store.putBucketCors(B, [other, RULE]);
  assert.deepEqual(await store.getBucketCors(B), [other, RULE]);
  assert.deepEqual(
    (await store.corsRulesByBucketName("shared-name")).map((r) => r.accountId),
    ["acc-a", "acc-b"],
  );

  await store.deleteBucketCors(A);
  assert.equal(await store.getBucketCors(A), undefined);
  await store.deleteBucketCors(A);

  const refused = (e: unknown) => e instanceof R2Error && e.v4code === R2Codes.invalidArgument;
  await assert.rejects(store.putBucketCors(A, []), refused);
  await assert.rejects(
    store.putBucketCors(
      A,
      Array.from({ length: 101 }, () => RULE),
    ),
    refused,
  );
  await assert.rejects(store.getBucketCors({ accountId: "acc-c", bucketName: "shared-name" }), (e: unknown) => e instanceof R2Error && e.status === 404);

  await store.deleteBucket(B.accountId, B.bucketName);
  assert.deepEqual(await store.corsRulesByBucketName("shared-name"), []);
  await store.createBucket(B.accountId, B.bucketName);
  assert.equal(await store.getBucketCors(B), undefined, "a new bucket of the same name starts without rules");
});
