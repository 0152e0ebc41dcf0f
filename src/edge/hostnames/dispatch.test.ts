import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, test } from "node:test";
import * as s3 from "@aws-sdk/client-s3";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import { request } from "undici";
import type { TestPlatform } from "../../core/testing/platform.js";
import { bootstrapS3Credentials, mintS3Credentials, s3Client, type S3Credentials } from "../../r2/s3/testing/s3.js";
import { createAccount, startPlatform, uploadScript } from "../../workers/testing/helpers.js";

/**
 * The edge's one decision by Host (issue 30, holes 1 and 2), on the real platform with two accounts: a tenant's
 * hostname reaches only that tenant's Workers (or an error page), never the v4 API, the dashboard or S3 path style;
 * the dashboard's paths are never a bucket's.
 */
let p: TestPlatform;
let port: string;
let accountB: string;
let asB: Record<string, string>;
let credsA: S3Credentials;
let credsB: S3Credentials;
let zoneB: string;

before(async () => {
  p = await startPlatform();
  port = new URL(p.url).port;
  accountB = await createAccount(p, "hostnames-b");
  const token = await p.api("POST", "/user/tokens", { name: "b", permissions: ["dns_edit", "workers_edit", "r2_edit"], account_id: accountB }, p.keyHeaders());
  assert.equal(token.status, 200, JSON.stringify(token.body));
  asB = { authorization: `Bearer ${token.body.result.value}` };
  credsA = await bootstrapS3Credentials(p);
  credsB = await mintS3Credentials(p, ["r2_edit"], accountB);
  zoneB = `hn${randomBytes(4).toString("hex")}.example`;
  const zone = await p.api("POST", "/zones", { name: zoneB, account: { id: accountB } }, asB);
  assert.equal(zone.status, 200, JSON.stringify(zone.body));
  const a = await s3Client(p, credsA);
  await a.send(new s3.CreateBucketCommand({ Bucket: "uploads-a" }));
  await a.send(new s3.PutObjectCommand({ Bucket: "uploads-a", Key: "secret.txt", Body: "A's upload" }));
  a.destroy();
});
after(() => p?.dispose());

/** A request to the edge port (on 127.0.0.1) with this Host. */
async function at(host: string, path: string, headers: Record<string, string> = {}, method = "GET") {
  const res = await request(`http://127.0.0.1:${port}${path}`, { method: method as "GET", headers: { host: `${host}:${port}`, ...headers } });
  return { status: res.statusCode, type: String(res.headers["content-type"] ?? ""), text: await res.body.text(), headers: res.headers };
}

/**
 * A presigned URL's path and query, signed for `host` (the SDK signs the Host header it would send): path style, or
 * virtual-hosted style when `host` is `<bucket>.<account>.r2.localhost`.
 */
async function presignedPath(creds: S3Credentials, host: string, command: s3.GetObjectCommand | s3.PutObjectCommand): Promise<string> {
  const virtual = host.endsWith(".r2.localhost");
  const endpoint = virtual ? host.slice(host.indexOf(".") + 1) : host;
  const client = await s3Client(p, creds, { endpoint: `http://${endpoint}:${port}`, forcePathStyle: !virtual, requestChecksumCalculation: "WHEN_REQUIRED" });
  const url = new URL(await getSignedUrl(client, command, { expiresIn: 300 }));
  assert.equal(url.host, `${host}:${port}`);
  client.destroy();
  return url.pathname + url.search;
}

test("a tenant's hostname never reaches the v4 API, the AI gateway, the dashboard or S3 path style", async () => {
  const host = `www.${zoneB}`;
  // A's token sent to B's hostname (as a victim's client would, pointed there) is not the API's to read.
  const verify = await at(host, "/client/v4/user/tokens/verify", { authorization: `Bearer ${p.token}` });
  assert.equal(verify.status, 404, verify.text);
  assert.match(verify.type, /^text\/html/);
  assert.doesNotMatch(verify.text, /"success"/);
  // The same request on the platform's own host is the API's.
  assert.equal((await at("127.0.0.1", "/client/v4/user/tokens/verify", { authorization: `Bearer ${p.token}` })).status, 200);

  const dash = await at(host, "/dash/");
  assert.equal(dash.status, 404);
  assert.doesNotMatch(dash.text, /app\.js/, "the dashboard's page is not served on a tenant's hostname");

  const gateway = await at(host, "/v1/00000000000000000000000000000000/gw/openai/chat/completions", {}, "POST");
  assert.equal(gateway.status, 404);
  assert.match(gateway.type, /^text\/html/);

  // A's presigned GET, signed for B's hostname: S3 path style is not answered there.
  const signed = await at(host, await presignedPath(credsA, host, new s3.GetObjectCommand({ Bucket: "uploads-a", Key: "secret.txt" })));
  assert.equal(signed.status, 404);
  assert.doesNotMatch(signed.text, /A's upload/);
  // ... and it is on the platform's host.
  const onPlatform = await at("127.0.0.1", await presignedPath(credsA, "127.0.0.1", new s3.GetObjectCommand({ Bucket: "uploads-a", Key: "secret.txt" })));
  assert.equal(onPlatform.text, "A's upload");
});

test("a tenant's hostname reaches its Workers by route; names nothing serves get the edge's error page", async () => {
  assert.equal(
    (
      await uploadScript(
        p,
        "hn-b-app",
        `export default { fetch: (req) => new Response("B " + new URL(req.url).pathname) };`,
        {},
        { accountId: accountB, headers: asB },
      )
    ).status,
    200,
  );
  const zone = (await p.api("GET", `/zones?name=${zoneB}`, undefined, asB)).body.result[0];
  const route = await p.api("POST", `/zones/${zone.id}/workers/routes`, { pattern: `app.${zoneB}/*`, script: "hn-b-app" }, asB);
  assert.equal(route.status, 200, JSON.stringify(route.body));
  assert.equal((await at(`app.${zoneB}`, "/client/v4/user")).text, "B /client/v4/user", "the Worker gets every path, the API's too");
  const none = await at(`other.${zoneB}`, "/");
  assert.equal(none.status, 404);
  assert.match(none.type, /^text\/html/);
  assert.equal(none.headers["content-security-policy"], "default-src 'none'");
  // A name under the platform's API hostname (localhost) serves nothing; an unknown name on loopback is the API's,
  // as it always was there.
  const reserved = await at("anything.localhost", "/client/v4/user/tokens/verify", { authorization: `Bearer ${p.token}` });
  assert.equal(reserved.status, 404);
  assert.match(reserved.text, /Error 1001/);
  assert.equal((await at("api.nowhere.invalid", "/client/v4/user/tokens/verify", { authorization: `Bearer ${p.token}` })).status, 200);
});

test("the dashboard's paths are never a bucket's: B's bucket `dash` is not served at /dash/ on the dashboard's origin", async () => {
  // Path style on the dashboard's host is not S3's for `dash`: B makes the bucket and its page on the S3 host.
  assert.equal((await p.api("POST", `/accounts/${accountB}/r2/buckets`, { name: "dash" }, asB)).status, 200);
  const vhost = `dash.${accountB}.r2.localhost`;
  const put = await request(`http://127.0.0.1:${port}${await presignedPath(credsB, vhost, new s3.PutObjectCommand({ Bucket: "dash", Key: "sw.html" }))}`, {
    method: "PUT",
    headers: { host: `${vhost}:${port}` },
    body: "<script>navigator.serviceWorker.register('/dash/sw.js')</script>",
  });
  assert.equal(put.statusCode, 200, await put.body.text());
  for (const path of ["/dash/sw.html", "/%64ash/sw.html", "/DASH/sw.html"]) {
    const signed = await presignedPath(credsB, "127.0.0.1", new s3.GetObjectCommand({ Bucket: "dash", Key: "sw.html" }));
    const res = await at("127.0.0.1", path + signed.slice("/dash/sw.html".length));
    assert.doesNotMatch(res.text, /serviceWorker/, `${path}: B's page is not answered on the dashboard's origin`);
  }
  // The dashboard is still there.
  const page = await at("127.0.0.1", "/dash/");
  assert.equal(page.status, 200);
  assert.match(page.text, /app\.js/);
  // Virtual-hosted style, on the S3 host, still serves B's bucket.
  const url = await presignedPath(credsB, vhost, new s3.GetObjectCommand({ Bucket: "dash", Key: "sw.html" }));
  assert.match((await at(vhost, url)).text, /serviceWorker/);
});

test("S3 and R2 object answers carry the sandbox CSP and nosniff: path style, virtual host, presigned, with a type override, errors, and the v4 API", async () => {
  const sandboxed = (headers: Record<string, unknown>, what: string) => {
    assert.equal(headers["content-security-policy"], "default-src 'none'; sandbox", what);
    assert.equal(headers["x-content-type-options"], "nosniff", what);
  };
  const a = await s3Client(p, credsA);
  await a.send(new s3.PutObjectCommand({ Bucket: "uploads-a", Key: "page.html", Body: "<script>alert(1)</script>", ContentType: "text/html" }));
  a.destroy();
  const pathStyle = await at("127.0.0.1", await presignedPath(credsA, "127.0.0.1", new s3.GetObjectCommand({ Bucket: "uploads-a", Key: "page.html" })));
  assert.equal(pathStyle.status, 200);
  sandboxed(pathStyle.headers, "path style, presigned");
  const vhost = `uploads-a.${p.accountId}.r2.localhost`;
  const virtual = await at(vhost, await presignedPath(credsA, vhost, new s3.GetObjectCommand({ Bucket: "uploads-a", Key: "page.html" })));
  assert.equal(virtual.status, 200);
  sandboxed(virtual.headers, "virtual host, presigned");
  const override = await at(
    "127.0.0.1",
    await presignedPath(
      credsA,
      "127.0.0.1",
      new s3.GetObjectCommand({ Bucket: "uploads-a", Key: "page.html", ResponseContentType: "text/html; charset=utf-8" }),
    ),
  );
  assert.equal(override.headers["content-type"], "text/html; charset=utf-8");
  sandboxed(override.headers, "with response-content-type");
  const missing = await at("127.0.0.1", await presignedPath(credsA, "127.0.0.1", new s3.GetObjectCommand({ Bucket: "uploads-a", Key: "nope.html" })));
  assert.equal(missing.status, 404);
  sandboxed(missing.headers, "an S3 error");
  const api = await request(`${p.apiUrl}/accounts/${p.accountId}/r2/buckets/uploads-a/objects/page.html`, { headers: p.headers() });
  assert.equal(await api.body.text(), "<script>alert(1)</script>");
  sandboxed(api.headers, "the v4 API");
});
