import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { pipeline } from "node:stream/promises";
import { Writable } from "node:stream";
import { SignatureV4 } from "@smithy/signature-v4";
import { request } from "undici";
import { AwsChunkedDecoder } from "./chunked.js";
import { S3Error } from "./errors.js";
import { ChunkSignatures, parseQuery, readSignature, STREAMING_SIGNED, verifySignature } from "./sigv4.js";
import { Sha256 } from "./testing/sha256.js";

/**
 * SigV4 verification on a real HTTP server, with requests signed by the AWS SDK's own signer, and the chunked
 * upload example of the S3 documentation (its published signatures) sent byte for byte.
 */

const ACCESS_KEY = "AKIAIOSFODNN7EXAMPLE";
const SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";

/** What the server saw: the verdict, and for aws-chunked bodies the decoded bytes' length and md5. */
type Verdict = { ok: true; bytes?: number; md5?: string } | { ok: false; code: string; message: string };

let server: Server;
let base: string;
/** The clock the server checks signatures against (tests of old published examples move it back). */
let serverNow = () => Date.now();

async function judge(req: IncomingMessage): Promise<Verdict> {
  const url = new URL(req.url ?? "/", "http://x");
  const rawPath = (req.url ?? "/").split("?")[0];
  const query = parseQuery((req.url ?? "").split("?")[1] ?? "");
  const signed = readSignature(req, query, serverNow());
  if (!signed) return { ok: false, code: "Unsigned", message: url.pathname };
  await verifySignature(req, rawPath, query, signed, SECRET);
  if (signed.payloadHash !== STREAMING_SIGNED) {
    req.resume();
    return { ok: true };
  }
  const md5 = createHash("md5");
  let bytes = 0;
  const decoder = new AwsChunkedDecoder({
    signatures: new ChunkSignatures(signed, SECRET),
    decodedLength: Number(req.headers["x-amz-decoded-content-length"]),
  });
  await pipeline(
    req,
    decoder,
    new Writable({
      write(chunk: Buffer, _enc, cb) {
        bytes += chunk.length;
        md5.update(chunk);
        cb();
      },
    }),
  );
  return { ok: true, bytes, md5: md5.digest("hex") };
}

before(async () => {
  server = createServer((req, res) => {
    judge(req).then(
      (v) => res.end(JSON.stringify(v)),
      (e: unknown) => {
        req.resume();
        const v: Verdict = e instanceof S3Error ? { ok: false, code: e.code, message: e.message } : { ok: false, code: "Crash", message: String(e) };
        res.end(JSON.stringify(v));
      },
    );
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => new Promise<void>((r) => server.close(() => r())));

const sha256 = (s: string | Buffer) => createHash("sha256").update(s).digest("hex");

/** Signs like the SDK does (S3: path as sent, x-amz-content-sha256 set by the caller) and sends. */
async function sendSigned(opts: {
  method?: string;
  path: string;
  query?: Record<string, string>;
  headers?: Record<string, string>;
  body?: string;
  secret?: string;
  region?: string;
  date?: Date;
  tamper?: (h: Record<string, string>) => void;
}): Promise<Verdict> {
  const { host } = new URL(base);
  const signer = new SignatureV4({
    credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: opts.secret ?? SECRET },
    region: opts.region ?? "auto",
    service: "s3",
    sha256: Sha256,
    uriEscapePath: false,
  });
  const body = opts.body ?? "";
  const signed = await signer.sign(
    {
      method: opts.method ?? "PUT",
      protocol: "http:",
      hostname: host,
      path: opts.path,
      query: opts.query ?? {},
      headers: { host, "x-amz-content-sha256": sha256(body), ...opts.headers },
    },
    { signingDate: opts.date },
  );
  const headers = { ...(signed.headers as Record<string, string>) };
  opts.tamper?.(headers);
  const qs = new URLSearchParams(opts.query ?? {}).toString().replace(/\+/g, "%20");
  const res = await request(`${base}${opts.path}${qs ? `?${qs}` : ""}`, { method: (opts.method ?? "PUT") as "PUT", headers, body: body || undefined });
  return (await res.body.json()) as Verdict;
}

test("header-signed requests verify; another secret, a changed header or body, another region or a skewed clock do not", async () => {
  const path = "/bucket/dir/a%20b%C3%BC%2B%21.txt";
  assert.deepEqual(await sendSigned({ path, headers: { "x-amz-meta-who": "me", "content-type": "text/plain" }, body: "hello" }), { ok: true });
  assert.deepEqual(await sendSigned({ method: "GET", path: "/bucket", query: { "list-type": "2", prefix: "a b/ü", "max-keys": "3" } }), { ok: true });
  assert.deepEqual(await sendSigned({ path, region: "us-east-1" }), { ok: true });

  const wrong = await sendSigned({ path, secret: "not-the-secret" });
  assert.equal(wrong.ok === false && wrong.code, "SignatureDoesNotMatch");
  const changed = await sendSigned({ path, headers: { "x-amz-meta-who": "me" }, tamper: (h) => (h["x-amz-meta-who"] = "someone else") });
  assert.equal(changed.ok === false && changed.code, "SignatureDoesNotMatch");
  const region = await sendSigned({ path, region: "eu-west-1" });
  assert.equal(region.ok === false && region.code, "AuthorizationHeaderMalformed");
  assert.match(region.ok === false ? region.message : "", /region 'eu-west-1' is wrong; expecting 'auto'/);
  const skewed = await sendSigned({ path, date: new Date(Date.now() - 16 * 60 * 1000) });
  assert.equal(skewed.ok === false && skewed.code, "RequestTimeTooSkewed");
  const withinSkew = await sendSigned({ path, date: new Date(Date.now() - 14 * 60 * 1000) });
  assert.deepEqual(withinSkew, { ok: true });
  const added = await sendSigned({ path, tamper: (h) => (h["x-amz-meta-added"] = "after signing") });
  assert.equal(added.ok === false && added.code, "AccessDenied");
  assert.match(added.ok === false ? added.message : "", /headers present in the request which were not signed: x-amz-meta-added/);
  const noPayloadHash = await sendSigned({ path, tamper: (h) => delete h["x-amz-content-sha256"] });
  assert.equal(noPayloadHash.ok === false && noPayloadHash.code, "InvalidRequest");
});

test("presigned URLs verify until they expire; a week is the longest they may live", async () => {
  const { host } = new URL(base);
  const presign = async (expiresIn: number, signingDate = new Date()) => {
    const signer = new SignatureV4({
      credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET },
      region: "auto",
      service: "s3",
      sha256: Sha256,
      uriEscapePath: false,
    });
    const out = await signer.presign(
      {
        method: "GET",
        protocol: "http:",
        hostname: host,
        path: "/bucket/key%20one",
        query: { "response-content-type": "text/plain" },
        headers: { host, "x-amz-content-sha256": "UNSIGNED-PAYLOAD" },
      },
      { expiresIn, signingDate },
    );
    const qs = Object.entries(out.query!)
      .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v as string)}`)
      .join("&");
    return `${base}${out.path}?${qs}`;
  };
  const get = async (url: string) => (await (await request(url)).body.json()) as Verdict;
  assert.deepEqual(await get(await presign(60)), { ok: true });
  const expired = await get(await presign(60, new Date(Date.now() - 120_000)));
  assert.deepEqual(expired.ok === false && [expired.code, expired.message], ["AccessDenied", "Request has expired"]);
  const tampered = (await presign(60)).replace("response-content-type=text%2Fplain", "response-content-type=text%2Fhtml");
  assert.equal(((await get(tampered)) as { code?: string }).code, "SignatureDoesNotMatch");
  const tooLong = (await presign(60)).replace(/X-Amz-Expires=\d+/, "X-Amz-Expires=604801");
  assert.equal(((await get(tooLong)) as { code?: string }).code, "AuthorizationQueryParametersError");
});

test("the S3 documentation's chunked upload example: every chunk signature checks out; a changed byte does not", async () => {
  // PUT /examplebucket/chunkObject.txt of 66,560 bytes of 'a' in chunks of 64 KiB and 1 KiB, signed 2013-05-24.
  const seed = "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9";
  const sigs = [
    "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
    "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
    "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9",
  ];
  const body = (first: Buffer) =>
    Buffer.concat([
      Buffer.from(`10000;chunk-signature=${sigs[0]}\r\n`),
      first,
      Buffer.from(`\r\n400;chunk-signature=${sigs[1]}\r\n`),
      Buffer.alloc(1024, "a"),
      Buffer.from(`\r\n0;chunk-signature=${sigs[2]}\r\n\r\n`),
    ]);
  const send = async (payload: Buffer, signature = seed) => {
    const res = await request(`${base}/examplebucket/chunkObject.txt`, {
      method: "PUT",
      headers: {
        host: "s3.amazonaws.com",
        "x-amz-date": "20130524T000000Z",
        "x-amz-storage-class": "REDUCED_REDUNDANCY",
        authorization: `AWS4-HMAC-SHA256 Credential=${ACCESS_KEY}/20130524/us-east-1/s3/aws4_request,SignedHeaders=content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-storage-class,Signature=${signature}`,
        "x-amz-content-sha256": STREAMING_SIGNED,
        "content-encoding": "aws-chunked",
        "x-amz-decoded-content-length": "66560",
        "content-length": String(payload.length),
      },
      body: payload,
    });
    return (await res.body.json()) as Verdict;
  };
  serverNow = () => Date.UTC(2013, 4, 24, 0, 5);
  try {
    const good = body(Buffer.alloc(65536, "a"));
    assert.equal(good.length, 66824, "the example's Content-Length");
    assert.deepEqual(await send(good), { ok: true, bytes: 66560, md5: createHash("md5").update(Buffer.alloc(66560, "a")).digest("hex") });
    const changed = Buffer.alloc(65536, "a");
    changed[1000] = 0x62;
    assert.equal(((await send(body(changed))) as { code?: string }).code, "SignatureDoesNotMatch");
    assert.equal(((await send(good, sigs[0])) as { code?: string }).code, "SignatureDoesNotMatch", "the seed signature is checked too");
  } finally {
    serverNow = () => Date.now();
  }
});
