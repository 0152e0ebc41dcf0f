import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { text } from "node:stream/consumers";
import { FileContentStore } from "../core/content/file-store.js";
import { openDatabase, type Db } from "../core/db/sqlite.js";
import { r2Migrations, SqliteR2Store } from "./sqlite-store.js";
import { R2Codes, R2Error, type BucketRef, type R2GetResult } from "./store.js";

let dir: string;
let db: Db;
let store: SqliteR2Store;
const ACC = "acc1";
const B: BucketRef = { accountId: ACC, bucketName: "bkt" };

before(() => {
  dir = mkdtempSync(join(tmpdir(), "r2-store-"));
  db = openDatabase(join(dir, "r2.sqlite"), r2Migrations);
  store = new SqliteR2Store(db, new FileContentStore(join(dir, "content")));
  store.createBucket(ACC, "bkt");
});
after(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

const md5 = (s: string | Buffer) => createHash("md5").update(s).digest("hex");
const bodyOf = async (r: R2GetResult | undefined) => {
  assert.ok(r && r.body, "expected a body");
  return text(r.body);
};
async function rejectsWith(p: Promise<unknown> | (() => unknown), status: number, code: number) {
  const run = typeof p === "function" ? async () => p() : () => p;
  await assert.rejects(run, (e: unknown) => {
    assert.ok(e instanceof R2Error, `expected R2Error, got ${String(e)}`);
    assert.equal(e.status, status);
    assert.equal(e.v4code, code);
    return true;
  });
}

test("bucket names: pattern, uniqueness per account, not-empty refusal", async () => {
  for (const bad of ["ab", "-abc", "abc-", "ABC", "a_b", "a".repeat(64)]) await rejectsWith(() => store.createBucket(ACC, bad), 400, R2Codes.invalidBucketName);
  store.createBucket(ACC, "abc");
  store.createBucket(ACC, "a".repeat(63));
  await rejectsWith(() => store.createBucket(ACC, "abc"), 409, R2Codes.bucketAlreadyExists);
  store.createBucket("acc2", "abc"); // another account may use the same name
  assert.deepEqual(
    store.listBuckets(ACC).map((b) => b.name),
    ["a".repeat(63), "abc", "bkt"],
  );
  assert.deepEqual(
    store.listBuckets("acc2").map((b) => b.name),
    ["abc"],
  );

  const ref = { accountId: ACC, bucketName: "abc" };
  await store.put(ref, "k", Buffer.from("x"));
  await rejectsWith(() => store.deleteBucket(ACC, "abc"), 409, R2Codes.bucketNotEmpty);
  await store.delete(ref, "k");
  const up = store.createMultipartUpload(ref, "m");
  await rejectsWith(() => store.deleteBucket(ACC, "abc"), 409, R2Codes.bucketNotEmpty);
  await store.abortMultipartUpload(ref, "m", up);
  store.deleteBucket(ACC, "abc");
  await rejectsWith(() => store.deleteBucket(ACC, "abc"), 404, R2Codes.bucketNotFound);
  assert.equal(store.getBucket("acc2", "abc")?.name, "abc");
  await rejectsWith(store.put({ accountId: ACC, bucketName: "nope" }, "k", Buffer.from("x")), 404, R2Codes.bucketNotFound);
});

test("put then get: etag is MD5, metadata round-trips, a stream body works", async () => {
  const info = await store.put(B, "dir/hello.txt", Readable.from([Buffer.from("hello "), Buffer.from("world")]), {
    httpMetadata: { contentType: "text/plain", cacheControl: "max-age=60", cacheExpiry: 1_700_000_000_000 },
    customMetadata: { owner: "ops", ü: "ñ" },
  });
  assert.ok(info);
  assert.equal(info.etag, md5("hello world"));
  assert.equal(info.size, 11);
  assert.equal(info.checksums.md5, md5("hello world"));
  assert.match(info.version, /^[0-9a-f]{32}$/);
  const got = store.get(B, "dir/hello.txt");
  assert.equal(await bodyOf(got), "hello world");
  assert.deepEqual(got!.object.httpMetadata, { contentType: "text/plain", cacheControl: "max-age=60", cacheExpiry: 1_700_000_000_000 });
  assert.deepEqual(got!.object.customMetadata, { owner: "ops", ü: "ñ" });
  assert.equal(store.head(B, "dir/hello.txt")?.etag, info.etag);
  assert.equal(store.head(B, "missing"), undefined);
  assert.equal(store.get(B, "missing"), undefined);
});

test("limits: key bytes, custom metadata bytes, announced size, checksums; nothing is written on refusal", async () => {
  await rejectsWith(store.put(B, "k".repeat(1025), Buffer.from("x")), 400, R2Codes.invalidObjectName);
  await store.put(B, "é".repeat(512), Buffer.from("x")); // exactly 1,024 bytes
  await rejectsWith(store.put(B, "", Buffer.from("x")), 400, R2Codes.invalidObjectName);
  await rejectsWith(store.put(B, "meta", Buffer.from("x"), { customMetadata: { k: "v".repeat(2048) } }), 400, R2Codes.metadataTooLarge);
  await rejectsWith(store.put(B, "sized", Readable.from([Buffer.from("abc")]), { size: 4 }), 400, R2Codes.invalidArgument);
  await rejectsWith(store.put(B, "digest", Buffer.from("abc"), { md5: md5("abd") }), 400, R2Codes.invalidDigest);
  const sha1 = createHash("sha1").update("abc").digest("hex");
  await rejectsWith(store.put(B, "digest", Buffer.from("abc"), { sha1: "00" + sha1.slice(2) }), 400, R2Codes.invalidDigest);
  for (const k of ["meta", "sized", "digest"]) assert.equal(store.head(B, k), undefined);
  const ok = await store.put(B, "digest", Readable.from([Buffer.from("abc")]), { sha1, md5: md5("abc") });
  assert.deepEqual(ok?.checksums, { md5: md5("abc"), sha1 });
});

test("overwrite keeps readers working and removes the old bytes", async () => {
  const contentDir = join(dir, "content");
  const count = () =>
    readdirSync(contentDir)
      .filter((d) => d !== "tmp")
      .flatMap((d) => readdirSync(join(contentDir, d))).length;
  await store.put(B, "ow", Buffer.from("first version"));
  const before = count();
  const reading = store.get(B, "ow");
  await store.put(B, "ow", Buffer.from("second"));
  assert.equal(await bodyOf(reading), "first version", "a read that started before the overwrite finishes with the old bytes");
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(count(), before, "the old content file was removed once its reader closed");
  assert.equal(await bodyOf(store.get(B, "ow")), "second");
});

test("small objects read again come from memory, and never stale", async () => {
  await store.put(B, "hot", Buffer.from("hot bytes v1"));
  assert.equal(await bodyOf(store.get(B, "hot")), "hot bytes v1");
  const again = store.get(B, "hot")!;
  assert.ok("bytes" in again && again.bytes, "the second read is served from memory");
  assert.equal(await bodyOf(again), "hot bytes v1");
  const ranged = store.get(B, "hot", { range: { offset: 4, length: 5 } })!;
  assert.equal(await bodyOf(ranged), "bytes");
  await store.put(B, "hot", Buffer.from("hot bytes v2"));
  const fresh = store.get(B, "hot")!;
  assert.ok(!("bytes" in fresh && fresh.bytes), "a new version is read from its own file");
  assert.equal(await bodyOf(fresh), "hot bytes v2");
  await store.delete(B, "hot");
  assert.equal(store.get(B, "hot"), undefined);
});

test("conditional get and put (etag match/no match, uploaded before/after)", async () => {
  const info = (await store.put(B, "cond", Buffer.from("v1")))!;
  const strong = (value: string) => ({ type: "strong" as const, value });
  const hit = (onlyIf: object) => store.get(B, "cond", { onlyIf })!;
  assert.ok(hit({ etagMatches: [strong(info.etag)] }).body);
  assert.equal(hit({ etagMatches: [strong("nope")] }).body, undefined);
  assert.ok("preconditionFailed" in hit({ etagMatches: [strong("nope")] }));
  assert.equal(hit({ etagMatches: [{ type: "weak", value: info.etag }] }).body, undefined, "weak etags never match strongly");
  assert.ok(hit({ etagMatches: [{ type: "wildcard" }] }).body);
  assert.equal(hit({ etagDoesNotMatch: [strong(info.etag)] }).body, undefined);
  assert.ok(hit({ etagDoesNotMatch: [strong("other")] }).body);
  assert.ok(hit({ uploadedBefore: info.uploaded + 1 }).body);
  assert.equal(hit({ uploadedBefore: info.uploaded }).body, undefined);
  assert.ok(hit({ uploadedAfter: info.uploaded - 1 }).body);
  assert.equal(hit({ uploadedAfter: info.uploaded }).body, undefined);
  // RFC 7232: a matching If-Match overrides a failing If-Unmodified-Since.
  assert.ok(hit({ etagMatches: [strong(info.etag)], uploadedBefore: 0 }).body);
  // Seconds granularity: an HTTP date in the same second counts as "not after".
  assert.equal(hit({ uploadedAfter: Math.floor(info.uploaded / 1000) * 1000, secondsGranularity: true }).body, undefined);

  assert.equal(await store.put(B, "cond", Buffer.from("v2"), { onlyIf: { etagMatches: [strong("nope")] } }), undefined);
  assert.equal(await bodyOf(store.get(B, "cond")), "v1", "a refused put writes nothing");
  assert.ok(await store.put(B, "cond", Buffer.from("v2"), { onlyIf: { etagMatches: [strong(info.etag)] } }));
  // If-None-Match: * creates only when absent.
  assert.equal(await store.put(B, "cond", Buffer.from("v3"), { onlyIf: { etagDoesNotMatch: [{ type: "wildcard" }] } }), undefined);
  assert.ok(await store.put(B, "fresh", Buffer.from("new"), { onlyIf: { etagDoesNotMatch: [{ type: "wildcard" }] } }));
  assert.equal(await store.put(B, "absent", Buffer.from("x"), { onlyIf: { etagMatches: [{ type: "wildcard" }] } }), undefined);
});

test("range reads: offset/length, suffix, clipping, 416", async () => {
  await store.put(B, "range", Buffer.from("0123456789"));
  const read = async (range: object) => {
    const r = store.get(B, "range", { range: range as never })!;
    return { text: await bodyOf(r), range: (r as { range: object }).range };
  };
  assert.deepEqual(await read({ offset: 2, length: 3 }), { text: "234", range: { offset: 2, length: 3 } });
  assert.deepEqual(await read({ offset: 7 }), { text: "789", range: { offset: 7, length: 3 } });
  assert.deepEqual(await read({ suffix: 4 }), { text: "6789", range: { offset: 6, length: 4 } });
  assert.deepEqual(await read({ suffix: 40 }), { text: "0123456789", range: { offset: 0, length: 10 } });
  assert.deepEqual(await read({ offset: 8, length: 100 }), { text: "89", range: { offset: 8, length: 2 } });
  await rejectsWith(() => store.get(B, "range", { range: { offset: 10 } }), 416, R2Codes.invalidRange);
});

test("listing: prefix, delimiter, cursor, startAfter, limit, include", async () => {
  const L: BucketRef = { accountId: ACC, bucketName: "listing" };
  store.createBucket(ACC, "listing");
  const keys = ["a", "b/1", "b/2", "b/3/x", "c/1", "d", "e/f/g", "photos/2024/x.jpg"];
  for (const k of keys) await store.put(L, k, Buffer.from(k), { httpMetadata: { contentType: "text/plain" }, customMetadata: { k } });

  const all = store.list(L);
  assert.deepEqual(
    all.objects.map((o) => o.key),
    keys,
  );
  assert.equal(all.truncated, false);
  assert.equal(all.cursor, undefined);
  assert.deepEqual(all.objects[0].httpMetadata, {}, "metadata only with include");
  const inc = store.list(L, { include: ["httpMetadata", "customMetadata"], limit: 1 });
  assert.deepEqual(inc.objects[0].httpMetadata, { contentType: "text/plain" });
  assert.deepEqual(inc.objects[0].customMetadata, { k: "a" });

  assert.deepEqual(
    store.list(L, { prefix: "b/" }).objects.map((o) => o.key),
    ["b/1", "b/2", "b/3/x"],
  );
  const d = store.list(L, { delimiter: "/" });
  assert.deepEqual(
    d.objects.map((o) => o.key),
    ["a", "d"],
  );
  assert.deepEqual(d.delimitedPrefixes, ["b/", "c/", "e/", "photos/"]);
  const db2 = store.list(L, { prefix: "b/", delimiter: "/" });
  assert.deepEqual(
    db2.objects.map((o) => o.key),
    ["b/1", "b/2"],
  );
  assert.deepEqual(db2.delimitedPrefixes, ["b/3/"]);
  assert.deepEqual(
    store.list(L, { startAfter: "b/3/x" }).objects.map((o) => o.key),
    ["c/1", "d", "e/f/g", "photos/2024/x.jpg"],
  );

  // Walk with a cursor, two items a page, with a delimiter: every item exactly once.
  const seen: string[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const page = store.list(L, { delimiter: "/", limit: 2, cursor });
    seen.push(...page.objects.map((o) => o.key), ...page.delimitedPrefixes);
    assert.ok(page.objects.length + page.delimitedPrefixes.length <= 2);
    cursor = page.truncated ? page.cursor : undefined;
    if (page.truncated) assert.ok(page.cursor);
    pages++;
  } while (cursor);
  assert.deepEqual(seen.sort(), ["a", "b/", "c/", "d", "e/", "photos/"]);
  assert.equal(pages, 3);

  // Without a delimiter.
  const flat: string[] = [];
  cursor = undefined;
  do {
    const page = store.list(L, { limit: 3, cursor });
    flat.push(...page.objects.map((o) => o.key));
    cursor = page.cursor;
  } while (cursor);
  assert.deepEqual(flat, keys);

  await rejectsWith(() => store.list(L, { limit: 0 }), 400, R2Codes.invalidMaxKeys);
  await rejectsWith(() => store.list(L, { limit: 1001 }), 400, R2Codes.invalidMaxKeys);
  await rejectsWith(() => store.list(L, { cursor: "!!not-a-cursor" }), 400, R2Codes.invalidArgument);
});

test("delete one or many; missing keys are fine", async () => {
  for (const k of ["x1", "x2", "x3"]) await store.put(B, k, Buffer.from(k));
  await store.delete(B, "x1");
  await store.delete(B, ["x2", "x3", "never-existed"]);
  for (const k of ["x1", "x2", "x3"]) assert.equal(store.head(B, k), undefined);
});

test("multipart: create, upload parts, complete (etag and bytes), abort, errors", async () => {
  const MiB = 1024 * 1024;
  const p1 = Buffer.alloc(5 * MiB, "a");
  const p2 = Buffer.from("tail-bytes");
  const id = store.createMultipartUpload(B, "big/multi.bin", { httpMetadata: { contentType: "application/x-test" }, customMetadata: { m: "1" } });
  const e2 = await store.uploadPart(B, "big/multi.bin", id, 2, Readable.from([p2]));
  const e1 = await store.uploadPart(B, "big/multi.bin", id, 1, p1);
  assert.equal(e1.etag, md5(p1));
  await rejectsWith(store.completeMultipartUpload(B, "big/multi.bin", id, [e2, e1]), 400, R2Codes.invalidPart);
  await rejectsWith(store.completeMultipartUpload(B, "big/multi.bin", id, [e1, { partNumber: 2, etag: "bad" }]), 400, R2Codes.invalidPart);
  const obj = await store.completeMultipartUpload(B, "big/multi.bin", id, [e1, e2]);
  const expectedEtag = md5(Buffer.concat([Buffer.from(md5(p1), "hex"), Buffer.from(md5(p2), "hex")])) + "-2";
  assert.equal(obj.etag, expectedEtag);
  assert.equal(obj.size, p1.length + p2.length);
  assert.deepEqual(obj.customMetadata, { m: "1" });
  const whole = store.get(B, "big/multi.bin")!;
  const buf = Buffer.concat(await (whole.body as Readable).toArray());
  assert.ok(buf.equals(Buffer.concat([p1, p2])));
  // A range across the part boundary.
  assert.equal(await bodyOf(store.get(B, "big/multi.bin", { range: { offset: 5 * MiB - 2, length: 6 } })), "aatail");
  await rejectsWith(store.uploadPart(B, "big/multi.bin", id, 3, Buffer.from("x")), 404, R2Codes.noSuchUpload);

  // Parts below 5 MiB (except the last) are refused; abort removes everything.
  const id2 = store.createMultipartUpload(B, "small");
  const s1 = await store.uploadPart(B, "small", id2, 1, Buffer.from("tiny"));
  const s2 = await store.uploadPart(B, "small", id2, 2, Buffer.from("tiny"));
  await rejectsWith(store.completeMultipartUpload(B, "small", id2, [s1, s2]), 400, R2Codes.entityTooSmall);
  await rejectsWith(store.uploadPart(B, "small", id2, 0, Buffer.from("x")), 400, R2Codes.invalidPart);
  await store.abortMultipartUpload(B, "small", id2);
  await rejectsWith(store.abortMultipartUpload(B, "small", id2), 404, R2Codes.noSuchUpload);
  assert.equal(store.head(B, "small"), undefined);
  const live = store.liveContent();
  assert.ok(live.size > 0);

  // Unfinished uploads expire; finished objects are untouched.
  const stale = store.createMultipartUpload(B, "stale");
  await store.uploadPart(B, "stale", stale, 1, Buffer.from("abandoned"));
  assert.equal(store.abortStaleUploads(Date.now() - 60_000), 0, "a fresh upload is kept");
  assert.equal(store.abortStaleUploads(Date.now() + 1), 1);
  await rejectsWith(store.uploadPart(B, "stale", stale, 2, Buffer.from("x")), 404, R2Codes.noSuchUpload);
  assert.ok(store.head(B, "big/multi.bin"));
});

test("concurrent overwrites and deletes leave exactly the content files the rows refer to", async () => {
  const C: BucketRef = { accountId: ACC, bucketName: "race" };
  store.createBucket(ACC, "race");
  const writers = Array.from({ length: 24 }, (_, i) =>
    store.put(C, `k${i % 3}`, Readable.from([Buffer.from(`writer ${i} `), Buffer.from("x".repeat(i * 100))])),
  );
  const deleters = [store.delete(C, "k2"), store.delete(C, ["k1", "k2"])];
  await Promise.all([...writers, ...deleters]);
  for (const k of ["k0", "k1", "k2"]) {
    const got = store.get(C, k);
    if (got) assert.match(await bodyOf(got), /^writer \d+ x*$/, "a whole value of one writer, never a mix");
  }
  await new Promise((r) => setTimeout(r, 100)); // unlinks of replaced content run in the background
  const contentDir = join(dir, "content");
  const onDisk = new Set(
    readdirSync(contentDir)
      .filter((d) => d !== "tmp")
      .flatMap((d) => readdirSync(join(contentDir, d))),
  );
  assert.deepEqual([...onDisk].sort(), [...store.liveContent()].sort());
  assert.deepEqual(readdirSync(join(contentDir, "tmp")), [], "no temporary files left behind");
});
