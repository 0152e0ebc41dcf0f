import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { Readable } from "node:stream";
import * as s3 from "@aws-sdk/client-s3";
import { startTestPlatform, type TestPlatform } from "../../core/testing/platform.js";
import { bootstrapS3Credentials, s3Client, s3ErrorOf } from "./testing/s3.js";

/** Objects through the AWS SDK: put, get, head, conditions, ranges, overrides, listings, deletes and copies. */
let p: TestPlatform;
let client: s3.S3Client;
const BUCKET = "objects";
const md5 = (s: string | Buffer) => createHash("md5").update(s).digest();

before(async () => {
  p = await startTestPlatform();
  client = await s3Client(p, await bootstrapS3Credentials(p));
  await client.send(new s3.CreateBucketCommand({ Bucket: BUCKET }));
});
after(async () => {
  client?.destroy();
  await p?.dispose();
});

const body = async (out: s3.GetObjectCommandOutput) => out.Body!.transformToString();

test("PutObject with HTTP and custom metadata; GetObject and HeadObject return them with the MD5 ETag", async () => {
  const data = "héllo, S3 ✓";
  const put = await client.send(
    new s3.PutObjectCommand({
      Bucket: BUCKET,
      Key: "dir/a b+ü.txt",
      Body: data,
      ContentType: "text/plain; charset=utf-8",
      ContentLanguage: "fr",
      ContentDisposition: 'attachment; filename="a.txt"',
      ContentEncoding: "identity",
      CacheControl: "max-age=60",
      Expires: new Date("2031-01-01T00:00:00Z"),
      Metadata: { who: "zoë", "Mixed-Case": "v" },
      ContentMD5: md5(data).toString("base64"),
      StorageClass: "STANDARD_IA",
    }),
  );
  assert.equal(put.ETag, `"${md5(data).toString("hex")}"`);
  for (const out of [
    await client.send(new s3.GetObjectCommand({ Bucket: BUCKET, Key: "dir/a b+ü.txt" })),
    await client.send(new s3.HeadObjectCommand({ Bucket: BUCKET, Key: "dir/a b+ü.txt" })),
  ]) {
    assert.equal(out.ETag, put.ETag);
    assert.equal(out.ContentType, "text/plain; charset=utf-8");
    assert.equal(out.ContentLanguage, "fr");
    assert.equal(out.ContentDisposition, 'attachment; filename="a.txt"');
    assert.equal(out.ContentEncoding, "identity");
    assert.equal(out.CacheControl, "max-age=60");
    assert.equal(out.ExpiresString, "Wed, 01 Jan 2031 00:00:00 GMT");
    assert.equal(out.ContentLength, Buffer.byteLength(data));
    assert.equal(out.StorageClass, "STANDARD_IA");
    assert.deepEqual(out.Metadata, { who: "=?UTF-8?B?em/Dqw==?=", "mixed-case": "v" }, "non-ASCII metadata comes back RFC 2047-encoded, as S3 sends it");
    assert.ok(out.LastModified instanceof Date);
  }
  assert.equal(await body(await client.send(new s3.GetObjectCommand({ Bucket: BUCKET, Key: "dir/a b+ü.txt" }))), data);
  // The same object through the v4 API: one store, the same etag and metadata.
  const listed = await p.api("GET", `/accounts/${p.accountId}/r2/buckets/${BUCKET}/objects?prefix=dir/`);
  const row = listed.body.result[0];
  assert.equal(row.etag, md5(data).toString("hex"));
  assert.deepEqual(row.custom_metadata, { who: "zoë", "mixed-case": "v" });
  assert.equal(row.http_metadata.contentType, "text/plain; charset=utf-8");
  assert.equal(row.storage_class, "InfrequentAccess");

  const missing = await s3ErrorOf(client.send(new s3.GetObjectCommand({ Bucket: BUCKET, Key: "nope" })));
  assert.deepEqual([missing.code, missing.status], ["NoSuchKey", 404]);
  assert.equal((await s3ErrorOf(client.send(new s3.HeadObjectCommand({ Bucket: BUCKET, Key: "nope" })))).status, 404);
  const tooLong = await s3ErrorOf(client.send(new s3.PutObjectCommand({ Bucket: BUCKET, Key: "k".repeat(1025), Body: "x" })));
  assert.equal(tooLong.code, "KeyTooLongError");
});

test("Content-MD5 and checksums are checked: a mismatch stores nothing", async () => {
  const bad = await s3ErrorOf(
    client.send(new s3.PutObjectCommand({ Bucket: BUCKET, Key: "md5.txt", Body: "real body", ContentMD5: md5("other").toString("base64") })),
  );
  assert.deepEqual([bad.code, bad.status], ["BadDigest", 400]);
  const invalid = await s3ErrorOf(client.send(new s3.PutObjectCommand({ Bucket: BUCKET, Key: "md5.txt", Body: "real body", ContentMD5: "not-md5" })));
  assert.equal(invalid.code, "InvalidDigest");
  const crc = await s3ErrorOf(client.send(new s3.PutObjectCommand({ Bucket: BUCKET, Key: "md5.txt", Body: "real body", ChecksumCRC32: "AAAAAA==" })));
  assert.equal(crc.code, "BadDigest");
  const sha = await s3ErrorOf(
    client.send(
      new s3.PutObjectCommand({ Bucket: BUCKET, Key: "md5.txt", Body: "real body", ChecksumSHA256: createHash("sha256").update("x").digest("base64") }),
    ),
  );
  assert.equal(sha.code, "BadDigest");
  assert.equal((await s3ErrorOf(client.send(new s3.HeadObjectCommand({ Bucket: BUCKET, Key: "md5.txt" })))).status, 404);
  const good = await client.send(
    new s3.PutObjectCommand({ Bucket: BUCKET, Key: "md5.txt", Body: "real body", ChecksumSHA1: createHash("sha1").update("real body").digest("base64") }),
  );
  assert.equal(good.ChecksumSHA1, createHash("sha1").update("real body").digest("base64"));
  const c32 = await client.send(new s3.PutObjectCommand({ Bucket: BUCKET, Key: "crc.txt", Body: "real body", ChecksumAlgorithm: "CRC32" }));
  assert.ok(c32.ChecksumCRC32, "the SDK's own CRC32 is accepted and echoed");
  const c32c = await s3ErrorOf(client.send(new s3.PutObjectCommand({ Bucket: BUCKET, Key: "crc.txt", Body: "x", ChecksumAlgorithm: "CRC32C" })));
  assert.equal(c32c.code, "NotImplemented");
});

test("a streamed body (aws-chunked with a CRC32 trailer, as the SDK sends streams) is stored whole", async () => {
  const chunks = Array.from({ length: 40 }, (_, i) => Buffer.alloc(100_000, i));
  const all = Buffer.concat(chunks);
  const seen: Record<string, string>[] = [];
  const watched = await s3Client(p, await bootstrapS3Credentials(p));
  watched.middlewareStack.add((next) => async (args) => (seen.push({ ...(args.request as { headers: Record<string, string> }).headers }), next(args)), {
    step: "finalizeRequest",
    priority: "low",
  });
  const put = await watched.send(new s3.PutObjectCommand({ Bucket: BUCKET, Key: "streamed.bin", Body: Readable.from(chunks), ContentLength: all.length }));
  assert.equal(put.ETag, `"${md5(all).toString("hex")}"`);
  assert.equal(seen[0]["x-amz-content-sha256"], "STREAMING-UNSIGNED-PAYLOAD-TRAILER", "the SDK sent an aws-chunked body");
  assert.equal(seen[0]["x-amz-trailer"], "x-amz-checksum-crc32");
  watched.destroy();
  const got = await client.send(new s3.GetObjectCommand({ Bucket: BUCKET, Key: "streamed.bin" }));
  assert.ok(Buffer.from(await got.Body!.transformToByteArray()).equals(all));
});

test("If-None-Match: * refuses to overwrite; conditional reads answer 304 and 412; ranges 206 and 416; response overrides", async () => {
  const first = await client.send(new s3.PutObjectCommand({ Bucket: BUCKET, Key: "cond.txt", Body: "0123456789" }));
  const again = await s3ErrorOf(client.send(new s3.PutObjectCommand({ Bucket: BUCKET, Key: "cond.txt", Body: "replaced", IfNoneMatch: "*" })));
  assert.deepEqual([again.code, again.status], ["PreconditionFailed", 412]);
  assert.equal(await body(await client.send(new s3.GetObjectCommand({ Bucket: BUCKET, Key: "cond.txt" }))), "0123456789");
  await client.send(new s3.PutObjectCommand({ Bucket: BUCKET, Key: "fresh.txt", Body: "new", IfNoneMatch: "*" }));

  const etag = first.ETag!;
  const other = '"00000000000000000000000000000000"';
  const get = (input: Partial<s3.GetObjectCommandInput>) => s3ErrorOf(client.send(new s3.GetObjectCommand({ Bucket: BUCKET, Key: "cond.txt", ...input })));
  assert.equal((await get({ IfMatch: etag })).code, "no error");
  assert.deepEqual(await get({ IfMatch: other }).then((e) => [e.code, e.status]), ["PreconditionFailed", 412]);
  assert.equal((await get({ IfNoneMatch: etag })).status, 304);
  assert.equal((await get({ IfNoneMatch: other })).code, "no error");
  const past = new Date(Date.now() - 3600_000);
  const future = new Date(Date.now() + 3600_000);
  assert.equal((await get({ IfModifiedSince: future })).status, 304);
  assert.equal((await get({ IfModifiedSince: past })).code, "no error");
  assert.equal((await get({ IfUnmodifiedSince: past })).status, 412);
  assert.equal((await get({ IfUnmodifiedSince: future })).code, "no error");
  assert.equal((await get({ IfMatch: etag, IfUnmodifiedSince: past })).code, "no error", "a matching If-Match wins over If-Unmodified-Since");
  assert.equal((await get({ IfNoneMatch: other, IfModifiedSince: future })).code, "no error", "If-None-Match wins over If-Modified-Since");
  const head = await s3ErrorOf(client.send(new s3.HeadObjectCommand({ Bucket: BUCKET, Key: "cond.txt", IfNoneMatch: etag })));
  assert.equal(head.status, 304);

  const range = await client.send(new s3.GetObjectCommand({ Bucket: BUCKET, Key: "cond.txt", Range: "bytes=2-5" }));
  assert.equal(range.$metadata.httpStatusCode, 206);
  assert.equal(range.ContentRange, "bytes 2-5/10");
  assert.equal(await body(range), "2345");
  assert.equal(await body(await client.send(new s3.GetObjectCommand({ Bucket: BUCKET, Key: "cond.txt", Range: "bytes=-3" }))), "789");
  assert.equal(await body(await client.send(new s3.GetObjectCommand({ Bucket: BUCKET, Key: "cond.txt", Range: "bytes=7-" }))), "789");
  const headRange = await client.send(new s3.HeadObjectCommand({ Bucket: BUCKET, Key: "cond.txt", Range: "bytes=0-0" }));
  assert.equal(headRange.ContentLength, 1);
  assert.equal(headRange.ContentRange, "bytes 0-0/10");
  const beyond = await get({ Range: "bytes=10-20" });
  assert.deepEqual([beyond.code, beyond.status], ["InvalidRange", 416]);

  const over = await client.send(
    new s3.GetObjectCommand({
      Bucket: BUCKET,
      Key: "cond.txt",
      ResponseContentType: "application/x-test",
      ResponseContentDisposition: "attachment",
      ResponseCacheControl: "no-store",
      ResponseContentLanguage: "de",
      ResponseContentEncoding: "identity",
      ResponseExpires: new Date("2030-01-01T00:00:00Z"),
    }),
  );
  assert.equal(over.ContentType, "application/x-test");
  assert.equal(over.ContentDisposition, "attachment");
  assert.equal(over.CacheControl, "no-store");
  assert.equal(over.ContentLanguage, "de");
  assert.equal(over.ContentEncoding, "identity");
  await over.Body!.transformToString();
});

test("ListObjectsV2: prefix, delimiter, continuation tokens, start-after, max-keys, fetch-owner, encoding-type=url; ListObjects v1 with markers", async () => {
  const keys = ["list/a", "list/b/1", "list/b/2", "list/c", "list/d/x/y", "list/e", "list/sp ace&<>"];
  for (const Key of keys) await client.send(new s3.PutObjectCommand({ Bucket: BUCKET, Key, Body: Key }));
  const all = await client.send(new s3.ListObjectsV2Command({ Bucket: BUCKET, Prefix: "list/" }));
  assert.deepEqual(
    all.Contents!.map((o) => o.Key),
    keys,
  );
  assert.equal(all.KeyCount, keys.length);
  assert.equal(all.Contents![0].ETag, `"${md5("list/a").toString("hex")}"`);
  assert.equal(all.Contents![0].Size, 6);
  assert.equal(all.Contents![0].Owner, undefined);

  const grouped = await client.send(new s3.ListObjectsV2Command({ Bucket: BUCKET, Prefix: "list/", Delimiter: "/" }));
  assert.deepEqual(
    grouped.Contents!.map((o) => o.Key),
    ["list/a", "list/c", "list/e", "list/sp ace&<>"],
  );
  assert.deepEqual(
    grouped.CommonPrefixes!.map((c) => c.Prefix),
    ["list/b/", "list/d/"],
  );

  // Pages of two, with the delimiter: every item once, in order.
  const seen: string[] = [];
  let token: string | undefined;
  do {
    const page = await client.send(new s3.ListObjectsV2Command({ Bucket: BUCKET, Prefix: "list/", Delimiter: "/", MaxKeys: 2, ContinuationToken: token }));
    assert.ok((page.KeyCount ?? 0) <= 2);
    seen.push(...(page.Contents ?? []).map((o) => o.Key!), ...(page.CommonPrefixes ?? []).map((c) => c.Prefix!));
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  assert.deepEqual(seen.sort(), ["list/a", "list/b/", "list/c", "list/d/", "list/e", "list/sp ace&<>"].sort());

  const after = await client.send(new s3.ListObjectsV2Command({ Bucket: BUCKET, Prefix: "list/", StartAfter: "list/c", FetchOwner: true }));
  assert.deepEqual(
    after.Contents!.map((o) => o.Key),
    ["list/d/x/y", "list/e", "list/sp ace&<>"],
  );
  assert.equal(after.Contents![0].Owner!.ID, p.accountId);
  const none = await client.send(new s3.ListObjectsV2Command({ Bucket: BUCKET, MaxKeys: 0 }));
  assert.equal(none.KeyCount, 0);
  assert.equal(none.IsTruncated, false);
  const encoded = await client.send(new s3.ListObjectsV2Command({ Bucket: BUCKET, Prefix: "list/sp", EncodingType: "url" }));
  assert.equal(encoded.EncodingType, "url");
  assert.equal(encoded.Contents![0].Key, encodeURIComponent("list/sp ace&<>"));
  const badToken = await s3ErrorOf(client.send(new s3.ListObjectsV2Command({ Bucket: BUCKET, ContinuationToken: "not a token" })));
  assert.equal(badToken.code, "InvalidArgument");

  // v1: Marker / NextMarker.
  const v1: string[] = [];
  let marker: string | undefined;
  for (;;) {
    const page = await client.send(new s3.ListObjectsCommand({ Bucket: BUCKET, Prefix: "list/", Delimiter: "/", MaxKeys: 3, Marker: marker }));
    v1.push(...(page.Contents ?? []).map((o) => o.Key!), ...(page.CommonPrefixes ?? []).map((c) => c.Prefix!));
    if (!page.IsTruncated) break;
    marker = page.NextMarker;
    assert.ok(marker);
  }
  assert.deepEqual(v1.sort(), seen.sort());
});

test("DeleteObject and DeleteObjects (verbose and quiet, with per-key errors)", async () => {
  for (const Key of ["del/1", "del/2", "del/3", "del/4"]) await client.send(new s3.PutObjectCommand({ Bucket: BUCKET, Key, Body: "x" }));
  const one = await client.send(new s3.DeleteObjectCommand({ Bucket: BUCKET, Key: "del/1" }));
  assert.equal(one.$metadata.httpStatusCode, 204);
  assert.equal((await client.send(new s3.DeleteObjectCommand({ Bucket: BUCKET, Key: "del/never" }))).$metadata.httpStatusCode, 204);
  const verbose = await client.send(
    new s3.DeleteObjectsCommand({ Bucket: BUCKET, Delete: { Objects: [{ Key: "del/2" }, { Key: "del/missing" }, { Key: "k".repeat(1100) }] } }),
  );
  assert.deepEqual(
    verbose.Deleted!.map((d) => d.Key),
    ["del/2", "del/missing"],
  );
  assert.deepEqual(
    verbose.Errors!.map((e) => e.Code),
    ["KeyTooLongError"],
  );
  const quiet = await client.send(new s3.DeleteObjectsCommand({ Bucket: BUCKET, Delete: { Quiet: true, Objects: [{ Key: "del/3" }, { Key: "del/4" }] } }));
  assert.equal(quiet.Deleted, undefined);
  assert.equal(quiet.Errors, undefined);
  const left = await client.send(new s3.ListObjectsV2Command({ Bucket: BUCKET, Prefix: "del/" }));
  assert.equal(left.KeyCount, 0);
  const tooMany = await s3ErrorOf(
    client.send(new s3.DeleteObjectsCommand({ Bucket: BUCKET, Delete: { Objects: Array.from({ length: 1001 }, (_, i) => ({ Key: `k${i}` })) } })),
  );
  assert.equal(tooMany.code, "MalformedXML");
});

test("CopyObject: metadata COPY and REPLACE, conditional copies, copying onto itself, a missing source", async () => {
  await client.send(new s3.PutObjectCommand({ Bucket: BUCKET, Key: "src.txt", Body: "copy me", ContentType: "text/x-src", Metadata: { a: "1" } }));
  const copied = await client.send(new s3.CopyObjectCommand({ Bucket: BUCKET, Key: "copy/same.txt", CopySource: `${BUCKET}/src.txt` }));
  assert.equal(copied.CopyObjectResult!.ETag, `"${md5("copy me").toString("hex")}"`);
  const kept = await client.send(new s3.HeadObjectCommand({ Bucket: BUCKET, Key: "copy/same.txt" }));
  assert.equal(kept.ContentType, "text/x-src");
  assert.deepEqual(kept.Metadata, { a: "1" });

  await client.send(
    new s3.CopyObjectCommand({
      Bucket: BUCKET,
      Key: "copy/replaced.txt",
      CopySource: `/${BUCKET}/${encodeURIComponent("src.txt")}`,
      MetadataDirective: "REPLACE",
      ContentType: "text/x-new",
      Metadata: { b: "2" },
    }),
  );
  const replaced = await client.send(new s3.HeadObjectCommand({ Bucket: BUCKET, Key: "copy/replaced.txt" }));
  assert.equal(replaced.ContentType, "text/x-new");
  assert.deepEqual(replaced.Metadata, { b: "2" });

  // Changing an object's own metadata is a copy onto itself with REPLACE; with COPY it is refused.
  await client.send(
    new s3.CopyObjectCommand({ Bucket: BUCKET, Key: "src.txt", CopySource: `${BUCKET}/src.txt`, MetadataDirective: "REPLACE", ContentType: "text/x-again" }),
  );
  assert.equal((await client.send(new s3.HeadObjectCommand({ Bucket: BUCKET, Key: "src.txt" }))).ContentType, "text/x-again");
  assert.equal(await body(await client.send(new s3.GetObjectCommand({ Bucket: BUCKET, Key: "src.txt" }))), "copy me");
  const self = await s3ErrorOf(client.send(new s3.CopyObjectCommand({ Bucket: BUCKET, Key: "src.txt", CopySource: `${BUCKET}/src.txt` })));
  assert.equal(self.code, "InvalidRequest");

  const etag = `"${md5("copy me").toString("hex")}"`;
  const cond = (input: Partial<s3.CopyObjectCommandInput>) =>
    s3ErrorOf(client.send(new s3.CopyObjectCommand({ Bucket: BUCKET, Key: "copy/cond.txt", CopySource: `${BUCKET}/src.txt`, ...input })));
  assert.equal((await cond({ CopySourceIfMatch: etag })).code, "no error");
  assert.deepEqual(await cond({ CopySourceIfMatch: '"0"' }).then((e) => [e.code, e.status]), ["PreconditionFailed", 412]);
  assert.equal((await cond({ CopySourceIfNoneMatch: etag })).status, 412);
  assert.equal((await cond({ CopySourceIfModifiedSince: new Date(Date.now() + 3600_000) })).status, 412);
  assert.equal((await cond({ CopySourceIfUnmodifiedSince: new Date(Date.now() - 3600_000) })).status, 412);

  assert.equal((await s3ErrorOf(client.send(new s3.CopyObjectCommand({ Bucket: BUCKET, Key: "x", CopySource: `${BUCKET}/nope` })))).code, "NoSuchKey");
  assert.equal(
    (await s3ErrorOf(client.send(new s3.CopyObjectCommand({ Bucket: BUCKET, Key: "x", CopySource: "no-such-bucket/src.txt" })))).code,
    "NoSuchBucket",
  );
});
