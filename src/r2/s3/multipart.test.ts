import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { Readable } from "node:stream";
import { crc32 } from "node:zlib";
import * as s3 from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import { SignatureV4 } from "@smithy/signature-v4";
import { request } from "undici";
import { startTestPlatform, type TestPlatform } from "../../core/testing/platform.js";
import { bootstrapS3Credentials, s3Client, s3ErrorOf, type S3Credentials } from "./testing/s3.js";
import { Sha256 } from "./testing/sha256.js";

/** Multipart uploads, UploadPartCopy, lib-storage, and bodies signed chunk by chunk (STREAMING-AWS4-HMAC-SHA256-PAYLOAD). */
let p: TestPlatform;
let client: s3.S3Client;
let creds: S3Credentials;
const BUCKET = "multi";
const MiB = 1024 * 1024;
const md5 = (b: Buffer | string) => createHash("md5").update(b).digest();

before(async () => {
  p = await startTestPlatform();
  creds = await bootstrapS3Credentials(p);
  client = await s3Client(p, creds);
  await client.send(new s3.CreateBucketCommand({ Bucket: BUCKET }));
});
after(async () => {
  client?.destroy();
  await p?.dispose();
});

const part = (n: number, size: number) => Buffer.alloc(size, 65 + n);

test("create, upload parts, list parts and uploads, complete: the object with the ETag md5-of-md5s-N and its metadata", async () => {
  const { UploadId } = await client.send(
    new s3.CreateMultipartUploadCommand({ Bucket: BUCKET, Key: "big/file.bin", ContentType: "application/x-big", Metadata: { kind: "multi" } }),
  );
  assert.ok(UploadId);
  const bodies = [part(1, 5 * MiB), part(2, 5 * MiB), part(3, 1234)];
  const etags: string[] = [];
  for (const [i, b] of bodies.entries()) {
    const out: s3.UploadPartCommandOutput = await client.send(
      new s3.UploadPartCommand({ Bucket: BUCKET, Key: "big/file.bin", UploadId, PartNumber: i + 1, Body: b }),
    );
    assert.equal(out.ETag, `"${md5(b).toString("hex")}"`);
    etags.push(out.ETag!);
  }
  const parts = await client.send(new s3.ListPartsCommand({ Bucket: BUCKET, Key: "big/file.bin", UploadId }));
  assert.deepEqual(
    parts.Parts!.map((x) => [x.PartNumber, x.ETag, x.Size]),
    bodies.map((b, i) => [i + 1, etags[i], b.length]),
  );
  assert.ok(parts.Parts!.every((x) => x.LastModified instanceof Date));
  const firstPage = await client.send(new s3.ListPartsCommand({ Bucket: BUCKET, Key: "big/file.bin", UploadId, MaxParts: 2 }));
  assert.equal(firstPage.IsTruncated, true);
  assert.equal(firstPage.NextPartNumberMarker, "2");
  const rest = await client.send(new s3.ListPartsCommand({ Bucket: BUCKET, Key: "big/file.bin", UploadId, PartNumberMarker: "2" }));
  assert.deepEqual(
    rest.Parts!.map((x) => x.PartNumber),
    [3],
  );

  const uploads = await client.send(new s3.ListMultipartUploadsCommand({ Bucket: BUCKET }));
  assert.deepEqual(
    uploads.Uploads!.map((u) => [u.Key, u.UploadId]),
    [["big/file.bin", UploadId]],
  );
  const grouped = await client.send(new s3.ListMultipartUploadsCommand({ Bucket: BUCKET, Delimiter: "/" }));
  assert.deepEqual(
    grouped.CommonPrefixes!.map((c) => c.Prefix),
    ["big/"],
  );

  const done = await client.send(
    new s3.CompleteMultipartUploadCommand({
      Bucket: BUCKET,
      Key: "big/file.bin",
      UploadId,
      MultipartUpload: { Parts: etags.map((ETag, i) => ({ ETag, PartNumber: i + 1 })) },
    }),
  );
  const expected = `"${md5(Buffer.concat(bodies.map((b) => md5(b)))).toString("hex")}-3"`;
  assert.equal(done.ETag, expected);
  assert.equal(done.Bucket, BUCKET);
  assert.equal(done.Key, "big/file.bin");
  const head = await client.send(new s3.HeadObjectCommand({ Bucket: BUCKET, Key: "big/file.bin" }));
  assert.equal(head.ETag, expected);
  assert.equal(head.ContentLength, 10 * MiB + 1234);
  assert.equal(head.ContentType, "application/x-big");
  assert.deepEqual(head.Metadata, { kind: "multi" });
  const across = await client.send(new s3.GetObjectCommand({ Bucket: BUCKET, Key: "big/file.bin", Range: `bytes=${5 * MiB - 2}-${5 * MiB + 1}` }));
  assert.equal(await across.Body!.transformToString(), "BBCC", "a range across a part boundary");
  assert.deepEqual((await client.send(new s3.ListMultipartUploadsCommand({ Bucket: BUCKET }))).Uploads ?? [], []);
});

test("Complete refuses wrong ETags, parts out of order, small parts and unknown uploads; Abort ends an upload", async () => {
  const { UploadId } = await client.send(new s3.CreateMultipartUploadCommand({ Bucket: BUCKET, Key: "bad.bin" }));
  const small = await client.send(new s3.UploadPartCommand({ Bucket: BUCKET, Key: "bad.bin", UploadId, PartNumber: 1, Body: "small" }));
  const tail = await client.send(new s3.UploadPartCommand({ Bucket: BUCKET, Key: "bad.bin", UploadId, PartNumber: 2, Body: "tail" }));
  const complete = (Parts: s3.CompletedPart[]) =>
    s3ErrorOf(client.send(new s3.CompleteMultipartUploadCommand({ Bucket: BUCKET, Key: "bad.bin", UploadId, MultipartUpload: { Parts } })));
  assert.deepEqual(await complete([{ PartNumber: 1, ETag: '"00000000000000000000000000000000"' }]).then((e) => [e.code, e.status]), ["InvalidPart", 400]);
  assert.equal((await complete([{ PartNumber: 3, ETag: small.ETag }])).code, "InvalidPart");
  assert.deepEqual(
    await complete([
      { PartNumber: 2, ETag: tail.ETag },
      { PartNumber: 1, ETag: small.ETag },
    ]).then((e) => [e.code, e.status]),
    ["InvalidPartOrder", 400],
  );
  assert.deepEqual(
    await complete([
      { PartNumber: 1, ETag: small.ETag },
      { PartNumber: 2, ETag: tail.ETag },
    ]).then((e) => [e.code, e.status]),
    ["EntityTooSmall", 400],
  );
  assert.equal((await s3ErrorOf(client.send(new s3.HeadObjectCommand({ Bucket: BUCKET, Key: "bad.bin" })))).status, 404, "nothing was completed");
  const badNumber = await s3ErrorOf(client.send(new s3.UploadPartCommand({ Bucket: BUCKET, Key: "bad.bin", UploadId, PartNumber: 10001, Body: "x" })));
  assert.equal(badNumber.code, "InvalidArgument");

  const abort = await client.send(new s3.AbortMultipartUploadCommand({ Bucket: BUCKET, Key: "bad.bin", UploadId }));
  assert.equal(abort.$metadata.httpStatusCode, 204);
  const gone = await s3ErrorOf(client.send(new s3.UploadPartCommand({ Bucket: BUCKET, Key: "bad.bin", UploadId, PartNumber: 1, Body: "x" })));
  assert.deepEqual([gone.code, gone.status], ["NoSuchUpload", 404]);
  assert.equal((await s3ErrorOf(client.send(new s3.ListPartsCommand({ Bucket: BUCKET, Key: "bad.bin", UploadId })))).code, "NoSuchUpload");
  assert.equal((await complete([{ PartNumber: 1, ETag: small.ETag }])).code, "NoSuchUpload");
  assert.equal((await s3ErrorOf(client.send(new s3.AbortMultipartUploadCommand({ Bucket: BUCKET, Key: "bad.bin", UploadId })))).code, "NoSuchUpload");
});

test("UploadPartCopy copies a range of an object into a part", async () => {
  const source = Buffer.concat([part(1, 5 * MiB), Buffer.from("0123456789")]);
  await client.send(new s3.PutObjectCommand({ Bucket: BUCKET, Key: "copy-src.bin", Body: source }));
  const { UploadId } = await client.send(new s3.CreateMultipartUploadCommand({ Bucket: BUCKET, Key: "copy-dst.bin" }));
  // Every copy goes into this upload from copy-src.bin; `extra` says which part, and the range or condition.
  const copyPart = (extra: { PartNumber: number; CopySourceRange?: string; CopySourceIfMatch?: string }) =>
    client.send(new s3.UploadPartCopyCommand({ Bucket: BUCKET, Key: "copy-dst.bin", UploadId, CopySource: `${BUCKET}/copy-src.bin`, ...extra }));
  const first = await copyPart({ PartNumber: 1 });
  assert.equal(first.CopyPartResult!.ETag, `"${md5(source).toString("hex")}"`);
  const second = await copyPart({ PartNumber: 2, CopySourceRange: `bytes=${5 * MiB + 2}-${5 * MiB + 5}` });
  assert.equal(second.CopyPartResult!.ETag, `"${md5("2345").toString("hex")}"`);
  const outOfRange = await s3ErrorOf(copyPart({ PartNumber: 3, CopySourceRange: "bytes=0-99999999" }));
  assert.equal(outOfRange.code, "InvalidArgument");
  const condFailed = await s3ErrorOf(copyPart({ PartNumber: 3, CopySourceIfMatch: '"0"' }));
  assert.equal(condFailed.code, "PreconditionFailed");
  await client.send(
    new s3.CompleteMultipartUploadCommand({
      Bucket: BUCKET,
      Key: "copy-dst.bin",
      UploadId,
      MultipartUpload: {
        Parts: [
          { PartNumber: 1, ETag: first.CopyPartResult!.ETag },
          { PartNumber: 2, ETag: second.CopyPartResult!.ETag },
        ],
      },
    }),
  );
  const got = Buffer.from(await (await client.send(new s3.GetObjectCommand({ Bucket: BUCKET, Key: "copy-dst.bin" }))).Body!.transformToByteArray());
  assert.ok(got.equals(Buffer.concat([source, Buffer.from("2345")])));
});

test("lib-storage's Upload of a 12 MiB stream (multipart, with the SDK's default checksums) round-trips", async () => {
  const data = Buffer.alloc(12 * MiB);
  for (let i = 0; i < data.length; i += 4096) data.writeUInt32BE(i, i);
  const upload = new Upload({
    client,
    params: { Bucket: BUCKET, Key: "lib-storage.bin", Body: Readable.from([data.subarray(0, 7 * MiB), data.subarray(7 * MiB)]) },
    partSize: 5 * MiB,
  });
  const done = await upload.done();
  assert.match(String(done.ETag), /^"[0-9a-f]{32}-3"$/);
  const got = Buffer.from(await (await client.send(new s3.GetObjectCommand({ Bucket: BUCKET, Key: "lib-storage.bin" }))).Body!.transformToByteArray());
  assert.ok(got.equals(data));
});

// ---- a client of signed aws-chunked bodies, on the SDK's signer ----

/**
 * Sends `chunks` as a STREAMING-AWS4-HMAC-SHA256-PAYLOAD body (what the Java SDK and others send): the request is
 * signed with that payload hash, and each chunk with the SDK signer's chunk signing (the event-signing string
 * with no headers is S3's chunk string). `tamper` changes a chunk after it was signed; with `trailer`, a CRC32
 * trailer is signed too (-TRAILER mode).
 */
async function sendSignedChunks(key: string, chunks: Buffer[], opts: { tamper?: number; trailer?: boolean; secret?: string } = {}) {
  const url = new URL(`${p.url}/${BUCKET}/${key}`);
  const signer = new SignatureV4({
    credentials: { ...creds, secretAccessKey: opts.secret ?? creds.secretAccessKey },
    region: "auto",
    service: "s3",
    sha256: Sha256,
    uriEscapePath: false,
  });
  const signingDate = new Date();
  const decoded = chunks.reduce((n, c) => n + c.length, 0);
  const mode = opts.trailer ? "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER" : "STREAMING-AWS4-HMAC-SHA256-PAYLOAD";
  const headers: Record<string, string> = {
    host: url.host,
    "x-amz-content-sha256": mode,
    "content-encoding": "aws-chunked",
    "x-amz-decoded-content-length": String(decoded),
    ...(opts.trailer ? { "x-amz-trailer": "x-amz-checksum-crc32" } : {}),
  };
  const signed = await signer.sign({ method: "PUT", protocol: "http:", hostname: url.hostname, path: url.pathname, query: {}, headers }, { signingDate });
  let prior = /Signature=([0-9a-f]{64})/.exec(String(signed.headers.authorization))![1];
  const frames: Buffer[] = [];
  for (const [i, chunk] of [...chunks, Buffer.alloc(0)].entries()) {
    const signature = await signer.sign({ headers: new Uint8Array(0), payload: chunk }, { signingDate, priorSignature: prior });
    prior = signature;
    const sent = opts.tamper === i ? Buffer.from(chunk).fill(0x21, 0, 1) : chunk;
    frames.push(Buffer.from(`${chunk.length.toString(16)};chunk-signature=${signature}\r\n`), sent, Buffer.from(chunk.length ? "\r\n" : ""));
  }
  if (opts.trailer) {
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(chunks.reduce((c, b) => crc32(b, c), 0) >>> 0);
    const trailer = `x-amz-checksum-crc32:${crc.toString("base64")}\n`;
    const longDate = signingDate.toISOString().replace(/[-:]|\.\d{3}/g, "");
    const scope = `${longDate.slice(0, 8)}/auto/s3/aws4_request`;
    const stringToSign = ["AWS4-HMAC-SHA256-TRAILER", longDate, scope, prior, createHash("sha256").update(trailer).digest("hex")].join("\n");
    const trailerSignature = await signer.sign(stringToSign, { signingDate });
    frames.push(Buffer.from(`${trailer.trimEnd()}\r\nx-amz-trailer-signature:${trailerSignature}\r\n\r\n`));
  } else frames.push(Buffer.from("\r\n"));
  const body = Buffer.concat(frames);
  const res = await request(url, { method: "PUT", headers: { ...(signed.headers as Record<string, string>), "content-length": String(body.length) }, body });
  return { status: res.statusCode, text: await res.body.text(), etag: res.headers.etag };
}

test("a body signed chunk by chunk is stored when every signature holds, and refused (nothing stored) when one does not", async () => {
  const chunks = [Buffer.alloc(64 * 1024, 1), Buffer.alloc(64 * 1024, 2), Buffer.from("last bytes")];
  const whole = Buffer.concat(chunks);
  const ok = await sendSignedChunks("signed-chunks.bin", chunks);
  assert.equal(ok.status, 200, ok.text);
  assert.equal(ok.etag, `"${md5(whole).toString("hex")}"`);
  const got = Buffer.from(await (await client.send(new s3.GetObjectCommand({ Bucket: BUCKET, Key: "signed-chunks.bin" }))).Body!.transformToByteArray());
  assert.ok(got.equals(whole));

  const withTrailer = await sendSignedChunks("signed-trailer.bin", chunks, { trailer: true });
  assert.equal(withTrailer.status, 200, withTrailer.text);

  const tampered = await sendSignedChunks("tampered.bin", chunks, { tamper: 1 });
  assert.equal(tampered.status, 403);
  assert.match(tampered.text, /<Code>SignatureDoesNotMatch<\/Code>/);
  const wrongKey = await sendSignedChunks("tampered.bin", chunks, { secret: "0".repeat(64) });
  assert.equal(wrongKey.status, 403);
  assert.equal((await s3ErrorOf(client.send(new s3.HeadObjectCommand({ Bucket: BUCKET, Key: "tampered.bin" })))).status, 404, "nothing stored");
});
