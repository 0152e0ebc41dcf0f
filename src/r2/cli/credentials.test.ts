import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import * as s3 from "@aws-sdk/client-s3";
import { startTestPlatform, type TestPlatform } from "../../core/testing/platform.js";
import { s3Client } from "../s3/testing/s3.js";

/** `edgecli r2 credentials` prints what an S3 client needs, and those credentials work. */
let p: TestPlatform;
before(async () => {
  p = await startTestPlatform();
});
after(async () => {
  await p?.dispose();
});

test("--json: endpoint, token id as access key, SHA-256 of the token as secret, region auto; an SDK client signs with them", async () => {
  const r = await p.cli(["r2", "credentials", "--json"]);
  assert.equal(r.code, 0, r.stderr);
  const view = JSON.parse(r.stdout);
  const verified = await p.api("GET", "/user/tokens/verify");
  assert.deepEqual(view, {
    endpoint: p.url,
    access_key_id: verified.body.result.id,
    secret_access_key: createHash("sha256").update(p.token).digest("hex"),
    region: "auto",
    accounts: [{ id: p.accountId, name: view.accounts[0].name, permission: "r2_edit" }],
  });
  const client = await s3Client(
    p,
    { accessKeyId: view.access_key_id, secretAccessKey: view.secret_access_key },
    { endpoint: view.endpoint, region: view.region },
  );
  await client.send(new s3.CreateBucketCommand({ Bucket: "from-cli-creds" }));
  assert.deepEqual(
    (await client.send(new s3.ListBucketsCommand({}))).Buckets!.map((b) => b.Name),
    ["from-cli-creds"],
  );
  client.destroy();
});

test("text output; refused for a global key and for a token without R2 permission (stderr, exit 1)", async () => {
  const text = await p.cli(["r2", "credentials"]);
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stdout, new RegExp(`^endpoint: +${p.url.replace(/[.]/g, "\\.")}$`, "m"));
  assert.match(text.stdout, /^access_key_id: +[0-9a-f]{32}$/m);
  assert.match(text.stdout, /^secret_access_key: +[0-9a-f]{64}$/m);
  assert.match(text.stdout, /^region: +auto$/m);

  const key = await p.cli(["r2", "credentials"], { env: { EDGE_API_TOKEN: "", EDGE_API_KEY: p.apiKey, EDGE_EMAIL: p.email } });
  assert.equal(key.code, 1);
  assert.match(key.stderr, /derived from an API token/);
  const dns = await p.api("POST", "/user/tokens", { name: "dns", permissions: ["dns_read"], account_id: p.accountId });
  const noR2 = await p.cli(["r2", "credentials"], { env: { EDGE_API_TOKEN: dns.body.result.value } });
  assert.equal(noR2.code, 1);
  assert.match(noR2.stderr, /has no R2 permission/);
  assert.equal(noR2.stdout, "");

  const help = await p.cli(["r2", "credentials", "--help"]);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /Show the S3 endpoint, access key id, secret access key and region/);
});
