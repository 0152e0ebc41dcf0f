import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import * as s3 from "@aws-sdk/client-s3";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import { chromium } from "playwright-core";
import { request } from "undici";
import { startTestPlatform, type TestPlatform } from "../../core/testing/platform.js";
import { bootstrapS3Credentials, mintS3Credentials, s3Client, s3ErrorOf } from "./testing/s3.js";

/** Bucket CORS, browser preflights, and presigned URLs used by plain HTTP clients (curl) and by a real browser. */
let p: TestPlatform;
let client: s3.S3Client;
/** Presigns as R2's documentation advises: no checksum of a body the URL cannot know. */
let presigner: s3.S3Client;
let dir: string;
const BUCKET = "web";
const ORIGIN = "https://app.example";
const run = promisify(execFile);

before(async () => {
  p = await startTestPlatform();
  const creds = await bootstrapS3Credentials(p);
  client = await s3Client(p, creds);
  presigner = await s3Client(p, creds, { requestChecksumCalculation: "WHEN_REQUIRED" });
  await client.send(new s3.CreateBucketCommand({ Bucket: BUCKET }));
  await client.send(new s3.PutObjectCommand({ Bucket: BUCKET, Key: "page.txt", Body: "from the bucket" }));
  dir = mkdtempSync(join(tmpdir(), "s3-cors-"));
});
after(async () => {
  client?.destroy();
  presigner?.destroy();
  await p?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

const RULES: s3.CORSRule[] = [
  {
    ID: "app",
    AllowedOrigins: [ORIGIN, "http://localhost:*"],
    AllowedMethods: ["GET", "PUT", "HEAD"],
    AllowedHeaders: ["content-type", "x-amz-*"],
    ExposeHeaders: ["ETag"],
    MaxAgeSeconds: 600,
  },
  { AllowedOrigins: ["*"], AllowedMethods: ["GET"] },
];

const preflight = (path: string, headers: Record<string, string>) => request(`${p.url}${path}`, { method: "OPTIONS", headers });

test("PutBucketCors, GetBucketCors, DeleteBucketCors; invalid rules are refused", async () => {
  assert.equal((await s3ErrorOf(client.send(new s3.GetBucketCorsCommand({ Bucket: BUCKET })))).code, "NoSuchCORSConfiguration");
  await client.send(new s3.PutBucketCorsCommand({ Bucket: BUCKET, CORSConfiguration: { CORSRules: RULES } }));
  const got = await client.send(new s3.GetBucketCorsCommand({ Bucket: BUCKET }));
  assert.deepEqual(got.CORSRules, RULES);
  const badMethod = await s3ErrorOf(
    client.send(new s3.PutBucketCorsCommand({ Bucket: BUCKET, CORSConfiguration: { CORSRules: [{ AllowedOrigins: ["*"], AllowedMethods: ["PATCH"] }] } })),
  );
  assert.equal(badMethod.code, "InvalidRequest");
  const twoStars = await s3ErrorOf(
    client.send(new s3.PutBucketCorsCommand({ Bucket: BUCKET, CORSConfiguration: { CORSRules: [{ AllowedOrigins: ["*.*"], AllowedMethods: ["GET"] }] } })),
  );
  assert.equal(twoStars.code, "InvalidRequest");
  assert.deepEqual((await client.send(new s3.GetBucketCorsCommand({ Bucket: BUCKET }))).CORSRules, RULES, "a refused configuration changes nothing");
  const reader = await s3Client(p, await mintS3Credentials(p, ["r2_read"]));
  assert.equal((await s3ErrorOf(reader.send(new s3.DeleteBucketCorsCommand({ Bucket: BUCKET })))).code, "AccessDenied");
  assert.equal((await reader.send(new s3.GetBucketCorsCommand({ Bucket: BUCKET }))).CORSRules!.length, 2);

  await client.send(new s3.DeleteBucketCorsCommand({ Bucket: BUCKET }));
  assert.equal((await s3ErrorOf(client.send(new s3.GetBucketCorsCommand({ Bucket: BUCKET })))).code, "NoSuchCORSConfiguration");
  await client.send(new s3.PutBucketCorsCommand({ Bucket: BUCKET, CORSConfiguration: { CORSRules: RULES } }));
});

test("a browser's preflight is answered from the bucket's rules; requests with an Origin get the CORS headers", async () => {
  const ok = await preflight(`/${BUCKET}/upload.txt`, {
    origin: ORIGIN,
    "access-control-request-method": "PUT",
    "access-control-request-headers": "Content-Type, X-Amz-Meta-Who",
  });
  assert.equal(ok.statusCode, 200);
  assert.equal(ok.headers["access-control-allow-origin"], ORIGIN);
  assert.equal(ok.headers["access-control-allow-methods"], "GET, PUT, HEAD");
  assert.equal(ok.headers["access-control-allow-headers"], "content-type, x-amz-meta-who");
  assert.equal(ok.headers["access-control-expose-headers"], "ETag");
  assert.equal(ok.headers["access-control-max-age"], "600");
  await ok.body.dump();
  const wildcard = await preflight(`/${BUCKET}/x`, { origin: "https://elsewhere.example", "access-control-request-method": "GET" });
  assert.equal(wildcard.headers["access-control-allow-origin"], "*");
  await wildcard.body.dump();
  for (const [why, headers] of [
    ["origin", { origin: "https://evil.example", "access-control-request-method": "PUT" }],
    ["method", { origin: ORIGIN, "access-control-request-method": "DELETE" }],
    ["header", { origin: ORIGIN, "access-control-request-method": "PUT", "access-control-request-headers": "x-forbidden" }],
  ] as const) {
    const refused = await preflight(`/${BUCKET}/upload.txt`, headers);
    assert.equal(refused.statusCode, 403, why);
    assert.match(await refused.body.text(), /<Code>AccessForbidden<\/Code>/, why);
    assert.equal(refused.headers["access-control-allow-origin"], undefined);
  }
  const noBucket = await preflight(`/no-such-bucket/x`, { origin: ORIGIN, "access-control-request-method": "GET" });
  assert.equal(noBucket.statusCode, 403);
  await noBucket.body.dump();

  const url = await getSignedUrl(presigner, new s3.GetObjectCommand({ Bucket: BUCKET, Key: "page.txt" }), { expiresIn: 60 });
  const withOrigin = await request(url, { headers: { origin: ORIGIN } });
  assert.equal(withOrigin.headers["access-control-allow-origin"], ORIGIN);
  assert.equal(withOrigin.headers["access-control-expose-headers"], "ETag");
  assert.equal(await withOrigin.body.text(), "from the bucket");
  const stranger = await request(url, { headers: { origin: "https://evil.example" } });
  assert.equal(stranger.headers["access-control-allow-origin"], "*", "the GET-from-anywhere rule");
  await stranger.body.dump();
  const putFromStranger = await request(await getSignedUrl(presigner, new s3.PutObjectCommand({ Bucket: BUCKET, Key: "x.txt" }), { expiresIn: 60 }), {
    method: "PUT",
    headers: { origin: "https://evil.example" },
    body: "x",
  });
  assert.equal(putFromStranger.statusCode, 200, "CORS only tells browsers what they may read; the signature authorises");
  assert.equal(putFromStranger.headers["access-control-allow-origin"], undefined);
  await putFromStranger.body.dump();
});

test("presigned PUT and GET with curl; a URL signed for GET does not PUT", async () => {
  const file = join(dir, "upload.bin");
  const data = Buffer.alloc(3 * 1024 * 1024 + 7, 9);
  writeFileSync(file, data);
  const put = await getSignedUrl(presigner, new s3.PutObjectCommand({ Bucket: BUCKET, Key: "curl/upload.bin", ContentType: "application/x-curl" }), {
    expiresIn: 300,
  });
  const up = await run("curl", ["-sS", "-o", "/dev/null", "-w", "%{http_code}", "-H", "content-type: application/x-curl", "-T", file, put]);
  assert.equal(up.stdout, "200");
  const get = await getSignedUrl(presigner, new s3.GetObjectCommand({ Bucket: BUCKET, Key: "curl/upload.bin" }), { expiresIn: 300 });
  const out = join(dir, "download.bin");
  const down = await run("curl", ["-sS", "-o", out, "-w", "%{http_code} %{content_type}", get]);
  assert.equal(down.stdout, "200 application/x-curl");
  assert.ok(readFileSync(out).equals(data));
  const head = await client.send(new s3.HeadObjectCommand({ Bucket: BUCKET, Key: "curl/upload.bin" }));
  assert.equal(head.ETag, `"${createHash("md5").update(data).digest("hex")}"`);

  const wrongMethod = await run("curl", ["-sS", "-w", "\n%{http_code}", "-T", file, get]);
  assert.match(wrongMethod.stdout, /<Code>SignatureDoesNotMatch<\/Code>[\s\S]*\n403$/);
  // Presigned with the SDK's default checksums, a PUT URL carries the CRC32 of an empty body: S3 refuses other bodies.
  const defaults = await getSignedUrl(client, new s3.PutObjectCommand({ Bucket: BUCKET, Key: "curl/default.bin" }), { expiresIn: 300 });
  const refused = await run("curl", ["-sS", "-w", "\n%{http_code}", "-T", file, defaults]);
  assert.match(refused.stdout, /<Code>BadDigest<\/Code>[\s\S]*\n400$/);
});

/** Debian's chromium (installed by .ci/run), or CHROMIUM_PATH. */
const CHROMIUM = [process.env.CHROMIUM_PATH, "/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"].find((f) => f && existsSync(f));

describe(
  "a web page on another origin uploads with a presigned URL",
  { skip: !CHROMIUM && !process.env.CI && "chromium is not installed (apt-get install chromium); runs under CI" },
  () => {
    let site: Server;
    before(async () => {
      // The page's origin is http://localhost:<port>, the platform's http://127.0.0.1:<port>: cross-origin for the browser.
      site = createServer((_req, res) => res.writeHead(200, { "content-type": "text/html" }).end("<!doctype html><title>app</title>"));
      await new Promise<void>((r) => site.listen(0, "127.0.0.1", r));
    });
    after(() => new Promise<void>((r) => site.close(() => r())));

    test("chromium: preflight, PUT, then GET reading the body and the exposed ETag; refused without a rule", async () => {
      assert.ok(CHROMIUM, "chromium is required under CI (apt-get install chromium)");
      const put = await getSignedUrl(presigner, new s3.PutObjectCommand({ Bucket: BUCKET, Key: "browser/hello.txt", ContentType: "text/plain" }), {
        expiresIn: 300,
      });
      const get = await getSignedUrl(presigner, new s3.GetObjectCommand({ Bucket: BUCKET, Key: "browser/hello.txt" }), { expiresIn: 300 });
      const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
      try {
        const page = await browser.newPage();
        await page.goto(`http://localhost:${(site.address() as AddressInfo).port}/`);
        const result = await page.evaluate(
          async ([putUrl, getUrl]) => {
            const up = await fetch(putUrl, { method: "PUT", headers: { "content-type": "text/plain" }, body: "typed in a browser" });
            const down = await fetch(getUrl);
            return { put: up.status, etag: up.headers.get("etag"), get: down.status, text: await down.text() };
          },
          [put, get],
        );
        assert.deepEqual(result, {
          put: 200,
          etag: `"${createHash("md5").update("typed in a browser").digest("hex")}"`,
          get: 200,
          text: "typed in a browser",
        });
        await client.send(new s3.DeleteBucketCorsCommand({ Bucket: BUCKET }));
        // Another URL: the browser keeps the first preflight's answer for its URL (MaxAgeSeconds).
        const blockedUrl = await getSignedUrl(presigner, new s3.PutObjectCommand({ Bucket: BUCKET, Key: "browser/blocked.txt", ContentType: "text/plain" }), {
          expiresIn: 300,
        });
        const blocked = await page.evaluate(async (putUrl) => {
          try {
            await fetch(putUrl, { method: "PUT", headers: { "content-type": "text/plain" }, body: "again" });
            return "sent";
          } catch (e) {
            return (e as Error).name;
          }
        }, blockedUrl);
        assert.equal(blocked, "TypeError", "without a rule the preflight fails and the browser sends nothing");
        assert.equal((await s3ErrorOf(client.send(new s3.HeadObjectCommand({ Bucket: BUCKET, Key: "browser/blocked.txt" })))).status, 404);
      } finally {
        await browser.close();
        await client.send(new s3.PutBucketCorsCommand({ Bucket: BUCKET, CORSConfiguration: { CORSRules: RULES } }));
      }
    });
  },
);

test("a preflight finds its bucket by the account in the host when two accounts share the bucket's name", async () => {
  const other = (await p.api("POST", "/accounts", { name: "Other" }, p.keyHeaders())).body.result.id as string;
  const otherClient = await s3Client(p, await mintS3Credentials(p, ["r2_edit"], other));
  await otherClient.send(new s3.CreateBucketCommand({ Bucket: BUCKET }));
  await otherClient.send(
    new s3.PutBucketCorsCommand({ Bucket: BUCKET, CORSConfiguration: { CORSRules: [{ AllowedOrigins: ["https://other.example"], AllowedMethods: ["GET"] }] } }),
  );
  const headers = { origin: ORIGIN, "access-control-request-method": "GET" };
  const ambiguous = await preflight(`/${BUCKET}/x`, headers);
  assert.equal(ambiguous.statusCode, 403, "two buckets of that name have rules: path style cannot tell which");
  await ambiguous.body.dump();
  const port = new URL(p.url).port;
  const mine = await preflight(`/${BUCKET}/x`, { ...headers, host: `${p.accountId}.r2.localhost:${port}` });
  assert.equal(mine.statusCode, 200);
  assert.equal(mine.headers["access-control-allow-origin"], ORIGIN);
  await mine.body.dump();
  const theirs = await preflight(`/${BUCKET}/x`, { ...headers, host: `${other}.r2.localhost:${port}` });
  assert.equal(theirs.statusCode, 403, "the other account's rules do not allow this origin");
  await theirs.body.dump();
  otherClient.destroy();
});
