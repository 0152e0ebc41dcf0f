import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import * as s3 from "@aws-sdk/client-s3";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import { request } from "undici";
import { startTestPlatform, type TestPlatform } from "../../core/testing/platform.js";
import { bootstrapS3Credentials, mintS3Credentials, s3Client, s3ErrorOf, type S3Credentials } from "./testing/s3.js";

/**
 * Who may do what through the S3 API, with the AWS SDK on a real platform: R2's credential derivation, every
 * signature refusal, permissions, two accounts with a bucket of the same name, and how a bucket finds its account.
 */
let p: TestPlatform;
let A: string;
let B: string;
let editA: S3Credentials;

before(async () => {
  p = await startTestPlatform();
  A = p.accountId;
  B = (await p.api("POST", "/accounts", { name: "Account B" }, p.keyHeaders())).body.result.id;
  editA = await bootstrapS3Credentials(p);
  for (const acc of [A, B]) {
    assert.equal((await p.api("POST", `/accounts/${acc}/r2/buckets`, { name: "same-name" }, p.keyHeaders())).status, 200);
    const put = await fetch(`${p.apiUrl}/accounts/${acc}/r2/buckets/same-name/objects/who.txt`, { method: "PUT", headers: p.keyHeaders(), body: `in ${acc}` });
    assert.equal(put.status, 200);
  }
});
after(async () => {
  await p?.dispose();
});

const text = async (client: s3.S3Client, Bucket: string, Key: string) =>
  (await (await client.send(new s3.GetObjectCommand({ Bucket, Key }))).Body!.transformToString()) as string;

test("bucket operations: create, head, location, list, duplicate, bad name, not empty, delete", async () => {
  const client = await s3Client(p, editA);
  await client.send(new s3.CreateBucketCommand({ Bucket: "s3-bkt" }));
  await client.send(
    new s3.CreateBucketCommand({ Bucket: "s3-hint", CreateBucketConfiguration: { LocationConstraint: "weur" as s3.BucketLocationConstraint } }),
  );
  const hinted = await p.api("GET", `/accounts/${A}/r2/buckets/s3-hint`);
  assert.equal(hinted.body.result.location, "weur", "the location constraint is the bucket's location hint");
  const badLocation = await s3ErrorOf(
    client.send(new s3.CreateBucketCommand({ Bucket: "s3-mars", CreateBucketConfiguration: { LocationConstraint: "mars-1" as s3.BucketLocationConstraint } })),
  );
  assert.equal(badLocation.code, "InvalidLocationConstraint");

  const head = await client.send(new s3.HeadBucketCommand({ Bucket: "s3-bkt" }));
  assert.equal(head.$metadata.httpStatusCode, 200);
  assert.equal((await client.send(new s3.GetBucketLocationCommand({ Bucket: "s3-bkt" }))).LocationConstraint, "auto");
  const listed = await client.send(new s3.ListBucketsCommand({}));
  assert.deepEqual(
    listed.Buckets!.map((b) => b.Name),
    ["s3-bkt", "s3-hint", "same-name"],
  );
  assert.equal(listed.Owner!.ID, A);
  assert.ok(listed.Buckets!.every((b) => b.CreationDate instanceof Date));
  const paged = await client.send(new s3.ListBucketsCommand({ MaxBuckets: 2, Prefix: "s3-" }));
  assert.deepEqual(
    paged.Buckets!.map((b) => b.Name),
    ["s3-bkt", "s3-hint"],
  );

  assert.equal((await s3ErrorOf(client.send(new s3.CreateBucketCommand({ Bucket: "s3-bkt" })))).code, "BucketAlreadyOwnedByYou");
  const badName = await s3ErrorOf(client.send(new s3.CreateBucketCommand({ Bucket: "Bad_Name" })));
  assert.equal(badName.code, "InvalidBucketName");
  assert.equal(badName.status, 400);

  await client.send(new s3.PutObjectCommand({ Bucket: "s3-bkt", Key: "keep", Body: "x" }));
  const notEmpty = await s3ErrorOf(client.send(new s3.DeleteBucketCommand({ Bucket: "s3-bkt" })));
  assert.deepEqual([notEmpty.code, notEmpty.status], ["BucketNotEmpty", 409]);
  await client.send(new s3.DeleteObjectCommand({ Bucket: "s3-bkt", Key: "keep" }));
  await client.send(new s3.DeleteBucketCommand({ Bucket: "s3-bkt" }));
  await client.send(new s3.DeleteBucketCommand({ Bucket: "s3-hint" }));
  assert.equal((await s3ErrorOf(client.send(new s3.HeadBucketCommand({ Bucket: "s3-bkt" })))).status, 404);
  const missing = await s3ErrorOf(client.send(new s3.ListObjectsV2Command({ Bucket: "s3-bkt" })));
  assert.deepEqual([missing.code, missing.status], ["NoSuchBucket", 404]);
});

test("signatures: a wrong secret, an unknown key, a skewed clock and an expired presigned URL are refused", async () => {
  const wrong = await s3Client(p, { accessKeyId: editA.accessKeyId, secretAccessKey: "0".repeat(64) });
  const sig = await s3ErrorOf(wrong.send(new s3.ListBucketsCommand({})));
  assert.deepEqual([sig.code, sig.status], ["SignatureDoesNotMatch", 403]);

  const unknown = await s3Client(p, { accessKeyId: "f".repeat(32), secretAccessKey: editA.secretAccessKey });
  const key = await s3ErrorOf(unknown.send(new s3.ListBucketsCommand({})));
  assert.deepEqual([key.code, key.status], ["InvalidAccessKeyId", 403]);

  const skewed = await s3Client(p, editA, { systemClockOffset: -20 * 60 * 1000 });
  assert.equal((await s3ErrorOf(skewed.send(new s3.ListBucketsCommand({})))).code, "RequestTimeTooSkewed");

  // Any of the regions R2 accepts; others are refused.
  for (const region of ["us-east-1", "auto"]) await (await s3Client(p, editA, { region })).send(new s3.ListBucketsCommand({}));
  assert.equal((await s3ErrorOf((await s3Client(p, editA, { region: "eu-west-1" })).send(new s3.ListBucketsCommand({})))).code, "AuthorizationHeaderMalformed");

  const client = await s3Client(p, editA);
  const url = await getSignedUrl(client, new s3.GetObjectCommand({ Bucket: "same-name", Key: "who.txt" }), {
    expiresIn: 1,
    signingDate: new Date(Date.now() - 5000),
  });
  const res = await request(url);
  const body = await res.body.text();
  assert.equal(res.statusCode, 403);
  assert.match(body, /<Code>AccessDenied<\/Code>/);
  assert.match(body, /<Message>Request has expired<\/Message>/);
  const fresh = await request(await getSignedUrl(client, new s3.GetObjectCommand({ Bucket: "same-name", Key: "who.txt" }), { expiresIn: 60 }));
  assert.equal(await fresh.body.text(), `in ${A}`);
  const tooLong = await s3ErrorOf(getSignedUrl(client, new s3.GetObjectCommand({ Bucket: "same-name", Key: "who.txt" }), { expiresIn: 8 * 24 * 3600 }));
  assert.notEqual(tooLong.code, "no error", "the SDK itself refuses to presign past 7 days");
  const forged = url.replace(/X-Amz-Expires=\d+/, "X-Amz-Expires=604801");
  assert.match(await (await request(forged)).body.text(), /AuthorizationQueryParametersError/);

  // A revoked token's key stops working at once.
  const revocable = await p.api("POST", "/user/tokens", { name: "revoked", permissions: ["r2_read"], account_id: A }, p.keyHeaders());
  const { s3CredentialsOf } = await import("./testing/s3.js");
  const revokedClient = await s3Client(p, s3CredentialsOf(revocable.body.result));
  await revokedClient.send(new s3.ListBucketsCommand({}));
  await p.api("DELETE", `/user/tokens/${revocable.body.result.id}`, undefined, p.keyHeaders());
  assert.equal((await s3ErrorOf(revokedClient.send(new s3.ListBucketsCommand({})))).code, "InvalidAccessKeyId");
});

test("permissions: a token without R2 permission is refused, r2_read reads but cannot write", async () => {
  const dnsOnly = await s3Client(p, await mintS3Credentials(p, ["dns_read"]));
  const none = await s3ErrorOf(dnsOnly.send(new s3.ListBucketsCommand({})));
  assert.deepEqual([none.code, none.status], ["AccessDenied", 403]);
  assert.equal((await s3ErrorOf(dnsOnly.send(new s3.GetObjectCommand({ Bucket: "same-name", Key: "who.txt" })))).code, "AccessDenied");

  const reader = await s3Client(p, await mintS3Credentials(p, ["r2_read"]));
  assert.equal(await text(reader, "same-name", "who.txt"), `in ${A}`);
  for (const write of [
    new s3.PutObjectCommand({ Bucket: "same-name", Key: "new.txt", Body: "x" }),
    new s3.DeleteObjectCommand({ Bucket: "same-name", Key: "who.txt" }),
    new s3.CreateBucketCommand({ Bucket: "reader-bucket" }),
    new s3.CreateMultipartUploadCommand({ Bucket: "same-name", Key: "mp" }),
  ]) {
    const refused = await s3ErrorOf(reader.send(write as never));
    assert.deepEqual([refused.code, refused.status], ["AccessDenied", 403], write.constructor.name);
  }
  assert.equal(await text(reader, "same-name", "who.txt"), `in ${A}`, "nothing was deleted");
});

test("two accounts: a bucket name is per account; a key reaching both names its account in the host", async () => {
  const inB = await s3Client(p, await mintS3Credentials(p, ["r2_edit"], B));
  assert.equal(await text(inB, "same-name", "who.txt"), `in ${B}`, "B's key reads B's bucket of the same name");
  await inB.send(new s3.PutObjectCommand({ Bucket: "same-name", Key: "b-only.txt", Body: "b" }));
  const fromA = await s3ErrorOf((await s3Client(p, editA)).send(new s3.HeadObjectCommand({ Bucket: "same-name", Key: "b-only.txt" })));
  assert.equal(fromA.status, 404, "A's bucket of that name never sees B's object");

  // A token of the global key's user with R2 on both accounts: path style alone is ambiguous.
  const both = await p.api("POST", "/user/tokens", { name: "both", permissions: ["r2_read"] }, p.keyHeaders());
  const { s3CredentialsOf } = await import("./testing/s3.js");
  const creds = s3CredentialsOf(both.body.result);
  const ambiguous = await s3ErrorOf((await s3Client(p, creds)).send(new s3.ListBucketsCommand({})));
  assert.equal(ambiguous.code, "InvalidRequest");
  assert.match(ambiguous.message, /reaches 2 accounts.*<ACCOUNT_ID>\.<s3 host>/);

  // <ACCOUNT_ID>.r2.localhost names the account (the test resolves every such name to the platform's address).
  const { Agent } = await import("node:http");
  const { NodeHttpHandler } = await import("@smithy/node-http-handler");
  const port = new URL(p.url).port;
  const agent = new Agent({ lookup: (_host, _opts, cb) => cb(null, [{ address: "127.0.0.1", family: 4 }] as never, undefined as never) });
  const viaHost = (account: string) =>
    s3Client(p, creds, { endpoint: `http://${account}.r2.localhost:${port}`, requestHandler: new NodeHttpHandler({ httpAgent: agent }) });
  assert.equal(await text(await viaHost(A), "same-name", "who.txt"), `in ${A}`);
  assert.equal(await text(await viaHost(B), "same-name", "who.txt"), `in ${B}`);
  // Virtual-hosted style under the account: same-name.<B>.r2.localhost.
  const virtual = await s3Client(p, creds, {
    endpoint: `http://${B}.r2.localhost:${port}`,
    forcePathStyle: false,
    requestHandler: new NodeHttpHandler({ httpAgent: agent }),
  });
  assert.equal(await text(virtual, "same-name", "who.txt"), `in ${B}`);
  // Virtual-hosted style on the S3 host alone: same-name.r2.localhost, the account from a single-account key.
  const plainVirtual = await s3Client(p, editA, {
    endpoint: `http://r2.localhost:${port}`,
    forcePathStyle: false,
    requestHandler: new NodeHttpHandler({ httpAgent: agent }),
  });
  assert.equal(await text(plainVirtual, "same-name", "who.txt"), `in ${A}`);
  // A key naming an account it does not reach.
  const other = (await p.api("POST", "/accounts", { name: "Account C" }, p.keyHeaders())).body.result.id as string;
  const onlyA = await s3Client(p, editA, { endpoint: `http://${other}.r2.localhost:${port}`, requestHandler: new NodeHttpHandler({ httpAgent: agent }) });
  assert.equal((await s3ErrorOf(onlyA.send(new s3.ListBucketsCommand({})))).code, "AccessDenied");
  agent.destroy();
});

test("requests that are not S3's go where they always went; unsigned requests on the S3 host are refused", async () => {
  const health = await request(`${p.url}/healthz`);
  assert.deepEqual(await health.body.json(), { status: "ok" });
  const api = await request(`${p.apiUrl}/user/tokens/verify`, { headers: p.headers() });
  assert.equal(api.statusCode, 200);
  await api.body.dump();
  const port = new URL(p.url).port;
  const anonymous = await request(`${p.url}/same-name/who.txt`, { headers: { host: `r2.localhost:${port}` } });
  assert.equal(anonymous.statusCode, 403);
  assert.match(await anonymous.body.text(), /<Code>AccessDenied<\/Code>/);
  const plain = await request(`${p.url}/same-name/who.txt`);
  assert.equal(plain.statusCode, 404, "an unsigned path-style request on another host is not the S3 API's");
  await plain.body.dump();
  const v2 = await request(`${p.url}/same-name/who.txt`, { headers: { authorization: "AWS AKID:c2lnbmF0dXJl" } });
  assert.equal(v2.statusCode, 400);
  assert.match(await v2.body.text(), /Signature Version 2 is not supported/);
});

test("what the API does not do is NotImplemented (501), never a silent success", async () => {
  const client = await s3Client(p, editA);
  const cases: [string, () => Promise<unknown>][] = [
    ["PutBucketVersioning", () => client.send(new s3.PutBucketVersioningCommand({ Bucket: "same-name", VersioningConfiguration: { Status: "Enabled" } }))],
    ["GetObjectTagging", () => client.send(new s3.GetObjectTaggingCommand({ Bucket: "same-name", Key: "who.txt" }))],
    ["PutBucketPolicy", () => client.send(new s3.PutBucketPolicyCommand({ Bucket: "same-name", Policy: "{}" }))],
    ["PutObject with SSE", () => client.send(new s3.PutObjectCommand({ Bucket: "same-name", Key: "sse", Body: "x", ServerSideEncryption: "AES256" }))],
    ["PutObject public-read", () => client.send(new s3.PutObjectCommand({ Bucket: "same-name", Key: "acl", Body: "x", ACL: "public-read" }))],
    ["GetObject versionId", () => client.send(new s3.GetObjectCommand({ Bucket: "same-name", Key: "who.txt", VersionId: "v1" }))],
    ["ListObjectVersions", () => client.send(new s3.ListObjectVersionsCommand({ Bucket: "same-name" }))],
  ];
  for (const [name, sent] of cases) {
    const e = await s3ErrorOf(sent());
    assert.deepEqual([e.code, e.status], ["NotImplemented", 501], name);
  }
  const versioning = await client.send(new s3.GetBucketVersioningCommand({ Bucket: "same-name" }));
  assert.equal(versioning.Status, undefined, "reading the versioning state has a true answer: never enabled");
  const listed = await client.send(new s3.ListObjectsV2Command({ Bucket: "same-name" }));
  assert.deepEqual(
    listed.Contents!.map((o) => o.Key),
    ["who.txt"],
    "nothing was written by a refused request",
  );
});
