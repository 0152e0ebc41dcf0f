import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import * as s3 from "@aws-sdk/client-s3";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import type { TestPlatform } from "../../core/testing/platform.js";
import { hit, startPlatform, uploadScript } from "../../workers/testing/helpers.js";
import { awsCli, awsCliMissing, bootstrapS3Credentials, s3Client, type S3Credentials } from "./testing/s3.js";

/**
 * One store behind every way in: an object written through S3 is the same object (bytes, ETag, metadata) for a
 * worker's R2 binding, the v4 API and `edgecli r2 object`, and one a worker wrote downloads with the aws CLI.
 */
const VIEWER = `
export default {
  async fetch(req, env) {
    const key = decodeURIComponent(new URL(req.url).pathname.slice(1));
    if (req.method === "PUT") {
      const o = await env.B.put(key, await req.text(), {
        httpMetadata: { contentType: "text/x-from-worker", contentLanguage: "en", cacheControl: "max-age=5" },
        customMetadata: { writer: "worker", note: "é" },
      });
      return Response.json({ etag: o.etag, size: o.size });
    }
    const o = await env.B.get(key);
    if (!o) return new Response("missing", { status: 404 });
    const text = o.size <= 1024 ? await o.text() : (await o.arrayBuffer(), undefined);
    return Response.json({ text, etag: o.etag, size: o.size, http: o.httpMetadata, custom: o.customMetadata, storageClass: o.storageClass });
  },
};`;

let p: TestPlatform;
let creds: S3Credentials;
let client: s3.S3Client;
let dir: string;
const BUCKET = "views";
const md5 = (b: string | Buffer) => createHash("md5").update(b).digest("hex");
const run = promisify(execFile);

before(async () => {
  p = await startPlatform();
  creds = await bootstrapS3Credentials(p);
  client = await s3Client(p, creds);
  dir = mkdtempSync(join(tmpdir(), "s3-views-"));
  await client.send(new s3.CreateBucketCommand({ Bucket: BUCKET }));
  const deployed = await uploadScript(p, "viewer", VIEWER, { bindings: [{ type: "r2_bucket", name: "B", bucket_name: BUCKET }] });
  assert.equal(deployed.status, 200, JSON.stringify(deployed.body));
});
after(async () => {
  client?.destroy();
  await p?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

test("a presigned upload (curl) is read by a worker's binding with the same ETag and metadata, and by the v4 API and the CLI", async () => {
  const presigner = await s3Client(p, creds, { requestChecksumCalculation: "WHEN_REQUIRED" });
  const url = await getSignedUrl(
    presigner,
    new s3.PutObjectCommand({ Bucket: BUCKET, Key: "up/hello.txt", ContentType: "text/plain", Metadata: { via: "presigned" } }),
    {
      expiresIn: 300,
    },
  );
  presigner.destroy();
  const body = "uploaded with a presigned URL";
  const put = await run("curl", ["-sS", "-D", "-", "-o", "/dev/null", "-X", "PUT", "-H", "content-type: text/plain", "--data-binary", body, url]);
  assert.match(put.stdout, /^HTTP\/1\.1 200/);
  assert.match(put.stdout, new RegExp(`etag: "${md5(body)}"`, "i"));

  const seen = await hit(p, "viewer", "/up/hello.txt");
  assert.equal(seen.status, 200, seen.text);
  assert.deepEqual(JSON.parse(seen.text), {
    text: body,
    etag: md5(body),
    size: body.length,
    http: { contentType: "text/plain" },
    custom: { via: "presigned" },
    storageClass: "Standard",
  });

  const v4 = await p.api("GET", `/accounts/${p.accountId}/r2/buckets/${BUCKET}/objects?prefix=up/`);
  assert.equal(v4.body.result[0].etag, md5(body));
  assert.deepEqual(v4.body.result[0].custom_metadata, { via: "presigned" });
  const cli = await p.cli(["r2", "object", "get", `${BUCKET}/up/hello.txt`, "--pipe"]);
  assert.equal(cli.code, 0, cli.stderr);
  assert.equal(cli.stdout, body);
});

test("a multipart object written through S3 has the same md5-of-md5s ETag for the binding", async () => {
  const { UploadId } = await client.send(new s3.CreateMultipartUploadCommand({ Bucket: BUCKET, Key: "mp.bin", ContentType: "application/x-mp" }));
  const parts = [Buffer.alloc(5 * 1024 * 1024, 1), Buffer.from("tail")];
  const etags: string[] = [];
  for (const [i, Body] of parts.entries())
    etags.push((await client.send(new s3.UploadPartCommand({ Bucket: BUCKET, Key: "mp.bin", UploadId, PartNumber: i + 1, Body }))).ETag!);
  const done = await client.send(
    new s3.CompleteMultipartUploadCommand({
      Bucket: BUCKET,
      Key: "mp.bin",
      UploadId,
      MultipartUpload: { Parts: etags.map((ETag, i) => ({ ETag, PartNumber: i + 1 })) },
    }),
  );
  const seen = JSON.parse((await hit(p, "viewer", "/mp.bin")).text);
  assert.equal(`"${seen.etag}"`, done.ETag);
  assert.match(seen.etag, /^[0-9a-f]{32}-2$/);
  assert.equal(seen.size, 5 * 1024 * 1024 + 4);
  assert.equal(seen.http.contentType, "application/x-mp");
});

test("an object a worker wrote downloads with the aws CLI (and the SDK) with the worker's ETag and metadata", { skip: awsCliMissing() }, async () => {
  const wrote = await hit(p, "viewer", "/from-worker/note.txt", { method: "PUT", body: "written by env.B.put" });
  assert.equal(wrote.status, 200, wrote.text);
  const { etag } = JSON.parse(wrote.text);
  assert.equal(etag, md5("written by env.B.put"));

  const cp = await awsCli(p, creds, ["s3", "cp", `s3://${BUCKET}/from-worker/note.txt`, "note.txt"], { cwd: dir });
  assert.equal(cp.code, 0, cp.stderr);
  assert.equal(readFileSync(join(dir, "note.txt"), "utf8"), "written by env.B.put");
  const head = await awsCli(p, creds, ["s3api", "head-object", "--bucket", BUCKET, "--key", "from-worker/note.txt"], { cwd: dir });
  assert.equal(head.code, 0, head.stderr);
  const meta = JSON.parse(head.stdout);
  assert.equal(meta.ETag, `"${etag}"`);
  assert.equal(meta.ContentType, "text/x-from-worker");
  assert.equal(meta.ContentLanguage, "en");
  assert.equal(meta.CacheControl, "max-age=5");
  assert.equal(meta.Metadata.writer, "worker");
  // Non-ASCII metadata travels as an RFC 2047 encoded word, as S3 sends it.
  assert.equal(meta.Metadata.note, "=?UTF-8?B?w6k=?=");
});
