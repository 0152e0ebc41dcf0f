import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import * as s3 from "@aws-sdk/client-s3";
import Database from "better-sqlite3";
import pg from "pg";
import { bootstrapS3Credentials, s3Client, type S3Credentials } from "../../r2/s3/testing/s3.js";
import { callGateway, chatBody, createGateway, startGatewayPlatform } from "../../ai-gateway/testing/helpers.js";
import { startMockProvider, type MockProvider } from "../../ai-gateway/testing/mock-provider.js";
import { hit, uploadScript } from "../../workers/testing/helpers.js";
import { eventually } from "../testing/eventually.js";
import { newTestCredentials, runCli, startTestPlatform, type TestPlatform } from "../testing/platform.js";
import { runOnTerminal } from "../testing/terminal.js";
import { testDatabaseAndBucket } from "../testing/backends.js";
import { awsEnv, type TestBucket, type TestDatabase } from "../testing/services.js";

const HANG_GUARD = { timeout: 300_000 };
const md5 = (b: Buffer) => createHash("md5").update(b).digest("hex");
const BIG = randomBytes(300 * 1024);
const LARGE_OBJECT = randomBytes(6 * 1024 * 1024 + 17);
const PART = randomBytes(5 * 1024 * 1024);
const QUEUED = ["first", "second", "third"];
const SITE_PAGE = "<h1>carried with its worker</h1>";
const WORKER = `export default { fetch(req, env) { return new Response("carried " + env.TOKEN); } };`;

/** What the test writes through the first platform and reads back through each copy. */
interface Written {
  gatewayLogIds: string[];
  storedKey: unknown;
  zone: { id: string; serial: number };
  namespaceId: string;
  token: { id: string; value: string };
  uploadId: string;
  etags: Map<string, string>;
  queueId: string;
}

async function kvPut(p: TestPlatform, ns: string, key: string, value: Buffer, query = "") {
  const res = await fetch(`${p.apiUrl}/accounts/${p.accountId}/storage/kv/namespaces/${ns}/values/${encodeURIComponent(key)}${query}`, {
    method: "PUT",
    headers: p.headers({ "content-type": "application/octet-stream" }),
    body: value,
  });
  assert.equal(res.status, 200, await res.text());
}

/** The ids of the `carried-gw` gateway's logs, oldest first. */
async function gatewayLogs(p: TestPlatform): Promise<string[]> {
  const r = await p.api("GET", `/accounts/${p.accountId}/ai-gateway/gateways/carried-gw/logs?order_by=created_at&order_by_direction=asc&per_page=50`);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return (r.body.result as { id: string }[]).map((l) => l.id);
}

/** The gateway's stored provider key is listed as it was, and opens: a request without a key goes out with it. */
async function checkStoredKey(p: TestPlatform, w: Written) {
  const listed = await p.api("GET", `/accounts/${p.accountId}/ai-gateway/gateways/carried-gw/provider_configs`);
  assert.deepEqual(listed.body.result, [w.storedKey], "the stored key, with its id and secret id");
  const r = await callGateway(`${p.url}/v1/${p.accountId}/carried-gw/openai/chat/completions`, {
    // Not logged: the gateway's logs must stay the ones written before the copy.
    headers: { "gw-aig-authorization": `Bearer ${p.token}`, "gw-aig-collect-log": "false" },
    body: chatBody("with the carried key"),
  });
  assert.equal(r.status, 200, r.text);
  assert.equal(provider!.requests.at(-1)!.headers.authorization, "Bearer sk-carried-key", "the carried key opens with the nodes' secrets key");
}

/** The stand-in provider every platform of the copy test calls (set by the test). */
let provider: MockProvider | undefined;

/** The zone's SOA serial, as the API reports it (the DNS server serves the same). */
async function zoneSerial(p: TestPlatform, zoneId: string): Promise<number> {
  const r = await p.api("GET", `/zones/${zoneId}/dns_records/export`);
  const soa = /\sIN\s+SOA\s+\S+\s+\S+\s+(\d+)/.exec(typeof r.body === "string" ? r.body : JSON.stringify(r.body));
  assert.ok(soa, `an SOA in the export: ${JSON.stringify(r.body).slice(0, 300)}`);
  return Number(soa[1]);
}

async function kvGet(p: TestPlatform, ns: string, key: string): Promise<Buffer | undefined> {
  const res = await fetch(`${p.apiUrl}/accounts/${p.accountId}/storage/kv/namespaces/${ns}/values/${encodeURIComponent(key)}`, { headers: p.headers() });
  if (res.status === 404) return undefined;
  assert.equal(res.status, 200);
  return Buffer.from(await res.arrayBuffer());
}

/** Every area's kinds of rows: tokens, KV values inline, in the content store and bulk-written, R2 objects, a multipart upload under way, CORS. */
async function writeEverything(p: TestPlatform, creds: S3Credentials): Promise<Written> {
  const token = (await p.api("POST", "/user/tokens", { name: "carried", permissions: ["kv_read"], account_id: p.accountId })).body.result;
  const ns = (await p.api("POST", `/accounts/${p.accountId}/storage/kv/namespaces`, { title: "copied" })).body.result.id as string;
  await kvPut(p, ns, "small", Buffer.from("a small value"));
  await kvPut(p, ns, "big", BIG);
  await kvPut(p, ns, "expiring", Buffer.from("for an hour"), "?expiration_ttl=3600");
  const bulk = Array.from({ length: 450 }, (_, i) => ({ key: `bulk/${String(i).padStart(3, "0")}`, value: `v${i}` }));
  bulk.push({ key: "bulk/big", value: BIG.toString("base64"), base64: true } as never);
  assert.equal((await p.api("PUT", `/accounts/${p.accountId}/storage/kv/namespaces/${ns}/bulk`, bulk)).status, 200);

  // An AI gateway with two logs (bodies in the row), written by calls through it to a stand-in provider.
  await createGateway(p, "carried-gw");
  for (const content of ["first", "second"]) {
    const answer = await callGateway(`${p.url}/v1/${p.accountId}/carried-gw/openai/chat/completions`, { body: chatBody(content) });
    assert.equal(answer.status, 200);
  }
  let gatewayLogIds: string[] = [];
  await eventually(async () => (gatewayLogIds = await gatewayLogs(p)).length === 2, "the gateway's two logs to be written", 60_000);
  // A stored provider key (sealed with the secrets key): carried sealed, it must open on the target.
  const storedKey = await p.api("POST", `/accounts/${p.accountId}/ai-gateway/gateways/carried-gw/provider_configs`, {
    provider_slug: "openai",
    default_config: true,
    secret: "sk-carried-key",
  });
  assert.equal(storedKey.status, 200, JSON.stringify(storedKey.body));

  // A DNS zone with a proxied record and a TXT record; its SOA serial must be carried as it is.
  const zoneId = (await p.api("POST", "/zones", { name: "carried.example", account: { id: p.accountId } })).body.result.id as string;
  for (const record of [
    { type: "A", name: "www", content: "203.0.113.10", proxied: true, ttl: 1 },
    { type: "TXT", name: "carried.example", content: '"kept"', ttl: 300 },
  ])
    assert.equal((await p.api("POST", `/zones/${zoneId}/dns_records`, record)).status, 200);
  const serial = await zoneSerial(p, zoneId);

  // A worker with a secret (sealed with the state directory's key) and a cron schedule.
  assert.equal((await uploadScript(p, "carried-worker", WORKER)).status, 200);
  assert.equal(
    (await p.api("PUT", `/accounts/${p.accountId}/workers/scripts/carried-worker/secrets`, { name: "TOKEN", text: "s3cret", type: "secret_text" })).status,
    200,
  );
  assert.equal((await p.api("PUT", `/accounts/${p.accountId}/workers/scripts/carried-worker/schedules`, [{ cron: "*/30 * * * *" }])).status, 200);
  assert.equal(
    (
      await p.api("PATCH", `/accounts/${p.accountId}/workers/scripts/carried-worker/script-settings`, {
        tags: ["cf:service=carried"],
        observability: { enabled: true, head_sampling_rate: 0.5 },
      })
    ).status,
    200,
  );

  // A queue with a pull consumer and three messages waiting, to be delivered in the order they were sent.
  const queueId = (await p.api("POST", `/accounts/${p.accountId}/queues`, { queue_name: "carried-q" })).body.result.queue_id as string;
  assert.equal((await p.api("POST", `/accounts/${p.accountId}/queues/${queueId}/consumers`, { type: "http_pull" })).status, 200);
  for (const body of QUEUED)
    assert.equal((await p.api("POST", `/accounts/${p.accountId}/queues/${queueId}/messages`, { body, content_type: "text" })).status, 200);

  // A worker with static assets, deployed as users do (edgecli deploy uploads the files with wrangler's protocol).
  const site = mkdtempSync(join(tmpdir(), "carried-site-"));
  try {
    mkdirSync(join(site, "public"));
    writeFileSync(join(site, "index.js"), WORKER);
    writeFileSync(join(site, "public", "index.html"), SITE_PAGE);
    writeFileSync(
      join(site, "wrangler.toml"),
      `name = "carried-site"\nmain = "index.js"\ncompatibility_date = "2024-09-01"\n\n[assets]\ndirectory = "./public"\n`,
    );
    const deployed = await p.cli(["deploy"], { cwd: site });
    assert.equal(deployed.code, 0, deployed.stderr);
  } finally {
    rmSync(site, { recursive: true, force: true });
  }

  const client = await s3Client(p, creds);
  try {
    await client.send(new s3.CreateBucketCommand({ Bucket: "carried" }));
    await client.send(new s3.CreateBucketCommand({ Bucket: "second" }));
    // An event notification rule (state of R2's database) that no write below matches.
    const rule = await p.api("PUT", `/accounts/${p.accountId}/event_notifications/r2/second/configuration/queues/${queueId}`, {
      rules: [{ actions: ["PutObject"], prefix: "never/" }],
    });
    assert.equal(rule.status, 200, JSON.stringify(rule.body));
    await client.send(
      new s3.PutBucketCorsCommand({
        Bucket: "carried",
        CORSConfiguration: { CORSRules: [{ AllowedOrigins: ["https://a.example"], AllowedMethods: ["GET"] }] },
      }),
    );
    const etags = new Map<string, string>();
    for (const [bucket, key, body] of [
      ["carried", "small.txt", Buffer.from("small object")],
      ["carried", "large.bin", LARGE_OBJECT],
      ["second", "small.txt", Buffer.from("the other bucket")],
    ] as const) {
      etags.set(
        `${bucket}/${key}`,
        (await client.send(new s3.PutObjectCommand({ Bucket: bucket, Key: key, Body: body, ContentType: "application/x-test" }))).ETag!,
      );
    }
    // A completed multipart object (its body is its parts) and one upload still under way.
    const done = await client.send(new s3.CreateMultipartUploadCommand({ Bucket: "carried", Key: "multi.bin" }));
    const p1 = await client.send(new s3.UploadPartCommand({ Bucket: "carried", Key: "multi.bin", UploadId: done.UploadId, PartNumber: 1, Body: PART }));
    const p2 = await client.send(
      new s3.UploadPartCommand({ Bucket: "carried", Key: "multi.bin", UploadId: done.UploadId, PartNumber: 2, Body: Buffer.from("end") }),
    );
    const completed = await client.send(
      new s3.CompleteMultipartUploadCommand({
        Bucket: "carried",
        Key: "multi.bin",
        UploadId: done.UploadId,
        MultipartUpload: {
          Parts: [
            { PartNumber: 1, ETag: p1.ETag },
            { PartNumber: 2, ETag: p2.ETag },
          ],
        },
      }),
    );
    etags.set("carried/multi.bin", completed.ETag!);
    const pending = await client.send(new s3.CreateMultipartUploadCommand({ Bucket: "carried", Key: "pending.bin" }));
    await client.send(new s3.UploadPartCommand({ Bucket: "carried", Key: "pending.bin", UploadId: pending.UploadId, PartNumber: 1, Body: PART }));
    return {
      gatewayLogIds,
      storedKey: storedKey.body.result,
      zone: { id: zoneId, serial },
      namespaceId: ns,
      token,
      uploadId: pending.UploadId!,
      etags,
      queueId,
    };
  } finally {
    client.destroy();
  }
}

/** Reads back everything `writeEverything` wrote, through platform `p` (a copy), and finishes the pending upload there. */
async function checkEverything(p: TestPlatform, creds: S3Credentials, w: Written) {
  const verify = await p.api("GET", "/user/tokens/verify", undefined, { authorization: `Bearer ${w.token.value}` });
  assert.equal(verify.status, 200, "a token made before the copy works after it (its hash was carried)");
  assert.deepEqual(await gatewayLogs(p), w.gatewayLogIds, "the gateway's logs, in their order");
  await checkStoredKey(p, w);
  assert.equal(await zoneSerial(p, w.zone.id), w.zone.serial, "the zone keeps its id and SOA serial");
  const records = await p.api("GET", `/zones/${w.zone.id}/dns_records?order=type`);
  assert.deepEqual(
    (records.body.result as { type: string; name: string; content: string; proxied: boolean }[]).map((r) => [r.type, r.name, r.content, r.proxied]),
    [
      ["A", "www.carried.example", "203.0.113.10", true],
      ["TXT", "carried.example", '"kept"', false],
    ],
  );
  assert.equal((await kvGet(p, w.namespaceId, "small"))?.toString(), "a small value");
  assert.ok((await kvGet(p, w.namespaceId, "big"))?.equals(BIG), "a value from the content store, byte for byte");
  assert.ok((await kvGet(p, w.namespaceId, "bulk/big"))?.equals(BIG), "a bulk-written big value, byte for byte");
  assert.equal((await kvGet(p, w.namespaceId, "bulk/449"))?.toString(), "v449");
  await eventually(async () => (await hit(p, "carried-worker", "/")).text === "carried s3cret", "the copied worker to run with its sealed secret", 60_000);
  const logsSetting = await p.api("GET", `/accounts/${p.accountId}/workers/scripts/carried-worker/script-settings`);
  assert.deepEqual(logsSetting.body.result.observability, { enabled: true, head_sampling_rate: 0.5 }, "the Workers Logs setting was carried");
  await eventually(async () => (await hit(p, "carried-site", "/")).text === SITE_PAGE, "the copied worker's static assets to be served", 60_000);
  const backlog = await p.api("GET", `/accounts/${p.accountId}/queues/${w.queueId}/metrics`);
  assert.equal(backlog.body.result.backlog_count, QUEUED.length, "the queued messages were carried (left for the way back)");
  const schedules = await p.api("GET", `/accounts/${p.accountId}/workers/scripts/carried-worker/schedules`);
  assert.equal(schedules.body.result.schedules[0].cron, "*/30 * * * *");
  const settings = await p.api("GET", `/accounts/${p.accountId}/workers/scripts/carried-worker/script-settings`);
  assert.deepEqual(settings.body.result.tags, ["cf:service=carried"], "the Worker's tags were carried");
  const keys = await p.api("GET", `/accounts/${p.accountId}/storage/kv/namespaces/${w.namespaceId}/keys?prefix=expiring`);
  assert.equal(keys.body.result.length, 1);
  assert.ok(keys.body.result[0].expiration > Date.now() / 1000, "the expiration was carried");

  const client = await s3Client(p, creds);
  try {
    for (const [path, etag] of w.etags) {
      const [bucket, key] = path.split("/") as [string, string];
      const got = await client.send(new s3.GetObjectCommand({ Bucket: bucket, Key: key }));
      assert.equal(got.ETag, etag, `${path} keeps its ETag`);
      if (key !== "multi.bin") assert.equal(got.ContentType, "application/x-test", `${path} keeps its content type`);
      const body = Buffer.from(await got.Body!.transformToByteArray());
      if (path === "carried/large.bin") assert.equal(md5(body), md5(LARGE_OBJECT));
      if (path === "carried/multi.bin") assert.equal(md5(body), md5(Buffer.concat([PART, Buffer.from("end")])));
    }
    const cors = await client.send(new s3.GetBucketCorsCommand({ Bucket: "carried" }));
    assert.deepEqual(cors.CORSRules?.[0]?.AllowedOrigins, ["https://a.example"]);
    const parts = await client.send(new s3.ListPartsCommand({ Bucket: "carried", Key: "pending.bin", UploadId: w.uploadId }));
    assert.equal(parts.Parts?.length, 1, "the upload under way was carried with its part");
    const p2 = await client.send(
      new s3.UploadPartCommand({ Bucket: "carried", Key: "pending.bin", UploadId: w.uploadId, PartNumber: 2, Body: Buffer.from("!") }),
    );
    await client.send(
      new s3.CompleteMultipartUploadCommand({
        Bucket: "carried",
        Key: "pending.bin",
        UploadId: w.uploadId,
        MultipartUpload: {
          Parts: [
            { PartNumber: 1, ETag: parts.Parts![0]!.ETag },
            { PartNumber: 2, ETag: p2.ETag },
          ],
        },
      }),
    );
    const finished = await client.send(new s3.GetObjectCommand({ Bucket: "carried", Key: "pending.bin" }));
    assert.equal(md5(Buffer.from(await finished.Body!.transformToByteArray())), md5(Buffer.concat([PART, Buffer.from("!")])));
  } finally {
    client.destroy();
  }
}

async function query<R>(db: TestDatabase, sql: string, params: unknown[] = []): Promise<R[]> {
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    return (await client.query(sql, params)).rows as R[];
  } finally {
    await client.end();
  }
}

const tempDir = (t: TestContext, prefix: string) => {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
};

function copyToDatabase(stateDir: string, db: TestDatabase, bucket: TestBucket, key: string, extra: string[] = []) {
  return runCli(["state", "copy", "--from-state-dir", stateDir, "--to-database-url", db.url, "--to-object-store-url", bucket.url, ...extra], {
    env: { EDGE_SECRETS_KEY: key, ...awsEnv(bucket.server) },
  });
}

test(
  "state copy: a state directory into PostgreSQL + a bucket and back; every area's rows and bodies carried, counts checked, reruns finish",
  HANG_GUARD,
  async (t) => {
    const backends = await testDatabaseAndBucket(t);
    if (!backends) return;
    const { db, bucket } = backends;
    const credentials = newTestCredentials();
    provider = await startMockProvider();
    t.after(() => provider!.close());
    const embedded = await startGatewayPlatform([`openai=${provider.url}`], { credentials });
    t.after(() => embedded.dispose());
    const s3creds = await bootstrapS3Credentials(embedded);
    const written = await writeEverything(embedded, s3creds);
    const key = readFileSync(join(embedded.stateDir, "keys", "secrets.key"), "utf8").trim();

    const whileRunning = await copyToDatabase(embedded.stateDir, db, bucket, key);
    assert.equal(whileRunning.code, 1);
    assert.match(whileRunning.stderr, /The platform is running: edgecli serve \(pid \d+\) is running on .*Stop every node/);
    await embedded.stop();

    const wrongKey = await copyToDatabase(embedded.stateDir, db, bucket, randomBytes(32).toString("base64"));
    assert.equal(wrongKey.code, 1);
    assert.match(wrongKey.stderr, /EDGE_SECRETS_KEY is not the key in .*secrets\.key/);

    const copied = await copyToDatabase(embedded.stateDir, db, bucket, key);
    assert.equal(copied.code, 0, copied.stderr);
    assert.match(copied.stderr, /kv entries: 454\/454 rows/, "progress lines without a terminal");
    assert.match(copied.stdout, /identity\s+api_tokens\s+2\s+0\s+2\s+2\s+0/);
    assert.match(copied.stdout, /kv\s+entries\s+454\s+0\s+454\s+454\s+0/);
    assert.match(copied.stdout, /r2\s+objects\s+4\s+0\s+4\s+4\s+0/);
    assert.match(copied.stdout, /r2\s+notification_rules\s+1\s+0\s+1\s+1\s+0/);
    assert.match(copied.stdout, /workers\s+secrets\s+1\s+0\s+1\s+1\s+0/);
    assert.match(copied.stdout, /queues\s+messages\s+3\s+0\s+3\s+3\s+0/);
    assert.match(
      copied.stdout,
      /Count check: every table of identity, dns, kv, r2, workers, worker assets, workers logs settings, queues, ai-gateway holds what the source holds/,
    );
    // Small R2 bodies (r2.sqlite's small-body table) land in their object's row, as a node on PostgreSQL keeps them.
    const where = await query<{ key: string; in_row: boolean }>(db, "SELECT key, body IS NOT NULL AS in_row FROM r2.objects ORDER BY key, bucket_id");
    assert.deepEqual(
      where.map((r) => [r.key, r.in_row]),
      [
        ["large.bin", false],
        ["multi.bin", false],
        ["small.txt", true],
        ["small.txt", true],
      ],
    );

    const again = await copyToDatabase(embedded.stateDir, db, bucket, key);
    assert.equal(again.code, 1, "a target with rows is refused");
    assert.match(again.stderr, /holds rows already \(identity accounts: 1, .*add --into-non-empty/);

    // An interrupted copy: rows missing from the target. The rerun copies them, and only them.
    await query(db, "DELETE FROM kv.entries WHERE key = $1", [Buffer.from("big")]);
    await query(db, "DELETE FROM r2.objects WHERE key = 'large.bin'");
    const resumed = await copyToDatabase(embedded.stateDir, db, bucket, key, ["--into-non-empty"]);
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.match(resumed.stdout, /kv\s+entries\s+454\s+453\s+454\s+1\s+453/);
    assert.match(resumed.stdout, /r2\s+objects\s+4\s+3\s+4\s+1\s+3/);

    const env = { EDGE_DATABASE_URL: db.url, EDGE_OBJECT_STORE_URL: bucket.url, EDGE_SECRETS_KEY: key, ...awsEnv(bucket.server) };
    const node = await startGatewayPlatform([`openai=${provider.url}`], { env, credentials });
    t.after(() => node.dispose());
    assert.ok(!node.output().includes("First start"), "the copied identity is the database's: no new bootstrap");
    await checkEverything(node, s3creds, written);

    const busy = await runCli(["state", "copy", "--from-database-url", db.url, "--from-object-store-url", bucket.url, "--to-state-dir", "/nonexistent"], {
      env: { EDGE_SECRETS_KEY: key, ...awsEnv(bucket.server) },
    });
    assert.equal(busy.code, 1);
    assert.match(busy.stderr, /The platform is running: 1 platform node is connected to postgres:/);
    await node.stop();

    // And back: a new state directory from the database, served embedded.
    const back = join(tempDir(t, "edge-copy-back-"), "state");
    // On a terminal: a progress bar instead of progress lines.
    const home = await runOnTerminal(["state", "copy", "--from-database-url", db.url, "--from-object-store-url", bucket.url, "--to-state-dir", back], {
      env: { EDGE_SECRETS_KEY: key, ...awsEnv(bucket.server) },
    });
    assert.equal(home.code, 0, home.screen);
    assert.match(home.screen, /Copying rows \[[█░]+\] 100% \| \d+\/\d+/);
    assert.doesNotMatch(home.screen, /kv entries: \d+\/\d+ rows/);
    assert.match(home.screen, /r2\s+objects\s+5\s+0\s+5\s+5\s+0/, "the object completed on the node came back too");
    assert.equal(readFileSync(join(back, "keys", "secrets.key"), "utf8").trim(), key, "the state directory keeps the nodes' key");
    const single = await startGatewayPlatform([`openai=${provider.url}`], { stateDir: back, credentials, env: { EDGE_SECRETS_KEY: "" } });
    try {
      await checkEverythingBack(single, s3creds, written);
    } finally {
      await single.stop();
    }
  },
);

/** After the round trip the pending upload was completed on the node: the object is there instead. */
async function checkEverythingBack(p: TestPlatform, creds: S3Credentials, w: Written) {
  assert.equal((await p.api("GET", "/user/tokens/verify", undefined, { authorization: `Bearer ${w.token.value}` })).status, 200);
  assert.ok((await kvGet(p, w.namespaceId, "bulk/big"))?.equals(BIG));
  assert.ok((await kvGet(p, w.namespaceId, "big"))?.equals(BIG));
  assert.deepEqual(await gatewayLogs(p), w.gatewayLogIds, "the gateway's logs, back on one machine");
  await checkStoredKey(p, w);
  await eventually(async () => (await hit(p, "carried-worker", "/")).text === "carried s3cret", "the worker, back on one machine", 60_000);
  const pulled = await p.api("POST", `/accounts/${p.accountId}/queues/${w.queueId}/messages/pull`, { batch_size: 10 });
  assert.deepEqual(
    (pulled.body.result.messages as { body: string }[]).map((m) => m.body),
    QUEUED,
    "the messages, back on one machine, in the order they were sent",
  );
  const client = await s3Client(p, creds);
  try {
    const got = await client.send(new s3.GetObjectCommand({ Bucket: "carried", Key: "pending.bin" }));
    assert.equal(md5(Buffer.from(await got.Body!.transformToByteArray())), md5(Buffer.concat([PART, Buffer.from("!")])));
    const large = await client.send(new s3.GetObjectCommand({ Bucket: "carried", Key: "large.bin" }));
    assert.equal(large.ETag, w.etags.get("carried/large.bin"));
    assert.equal(md5(Buffer.from(await large.Body!.transformToByteArray())), md5(LARGE_OBJECT));
    // A small body that PostgreSQL kept in the row, back in a state directory.
    const small = await client.send(new s3.GetObjectCommand({ Bucket: "second", Key: "small.txt" }));
    assert.equal(small.ETag, w.etags.get("second/small.txt"));
    assert.equal(await small.Body!.transformToString(), "the other bucket");
  } finally {
    client.destroy();
  }
}

test("state copy: a row the target refuses fails the count check with the difference", HANG_GUARD, async (t) => {
  const backends = await testDatabaseAndBucket(t);
  if (!backends) return;
  const { db, bucket } = backends;
  const embedded = await startTestPlatform();
  t.after(() => embedded.dispose());
  await embedded.stop();
  const key = readFileSync(join(embedded.stateDir, "keys", "secrets.key"), "utf8").trim();
  // The target holds the bootstrap user, and another token with the bootstrap token's hash (token hashes are unique).
  const source = new Database(join(embedded.stateDir, "db", "core.sqlite"), { readonly: true });
  const user = source.prepare("SELECT id, email, created_on FROM users").get() as { id: string; email: string; created_on: string };
  const token = source.prepare("SELECT token_hash FROM api_tokens").get() as { token_hash: string };
  source.close();
  const first = await copyToDatabase(embedded.stateDir, db, bucket, key);
  assert.equal(first.code, 0, first.stderr);
  await query(db, "DELETE FROM core.api_tokens");
  await query(
    db,
    `INSERT INTO core.api_tokens (id, user_id, name, token_hash, status, grants, issued_on, modified_on) VALUES ('other', $1, 'x', $2, 'active', '[]', 'now', 'now')`,
    [user.id, token.token_hash],
  );
  const r = await copyToDatabase(embedded.stateDir, db, bucket, key, ["--into-non-empty"]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /Count check failed:\n\s+identity api_tokens: 1 row\(s\) refused by the target/);
});

test("state copy: one direction at a time, each with its settings", async () => {
  const none = await runCli(["state", "copy"]);
  assert.equal(none.code, 1);
  assert.match(none.stderr, /Give one direction: --from-state-dir DIR --to-database-url URL --to-object-store-url URL, or/);
  const half = await runCli(["state", "copy", "--from-state-dir", "/tmp", "--to-database-url", "postgres://x@127.0.0.1:1/x"]);
  assert.equal(half.code, 1);
  assert.match(half.stderr, /--to-object-store-url is required for this direction/);
  const help = await runCli(["state", "copy", "--help"]);
  assert.match(help.stdout, /Areas copied: identity .*KV .*R2 .*Workers/);
  assert.match(help.stdout, /--into-non-empty/);
});

test("state copy into PostgreSQL refuses a state directory holding what only one machine keeps, naming it, unless --leave-behind", HANG_GUARD, async (t) => {
  const p = await startTestPlatform({ args: ["--dns-port", "0"] });
  t.after(() => p.dispose());
  assert.equal((await p.api("POST", `/accounts/${p.accountId}/d1/database`, { name: "kept-here" })).status, 200);
  const tsig = await p.api("POST", `/accounts/${p.accountId}/secondary_dns/tsigs`, {
    name: "k.",
    algo: "hmac-sha256.",
    secret: randomBytes(32).toString("base64"),
  });
  assert.equal(tsig.status, 200);
  await p.stop();
  const key = readFileSync(join(p.stateDir, "keys", "secrets.key"), "utf8").trim();
  // Nothing listens on port 1: the check comes before any connection.
  const target = ["--to-database-url", "postgres://edge@127.0.0.1:1/edge", "--to-object-store-url", "s3://edge-bucket?endpoint=http://127.0.0.1:1&region=r"];
  const refused = await runCli(["state", "copy", "--from-state-dir", p.stateDir, ...target], { env: { EDGE_SECRETS_KEY: key } });
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /holds what the platform keeps on one machine only.*1 zone transfer settings \(TSIG keys.*; 1 D1 databases\..*--leave-behind/);
  const leaving = await runCli(["state", "copy", "--from-state-dir", p.stateDir, ...target, "--leave-behind"], { env: { EDGE_SECRETS_KEY: key } });
  assert.equal(leaving.code, 1, "past the check, the copy goes on to the (unreachable) database");
  assert.doesNotMatch(leaving.stderr, /holds what the platform keeps on one machine only/);
  assert.match(leaving.stdout + leaving.stderr, /Left behind in .*1 D1 databases/);
});
