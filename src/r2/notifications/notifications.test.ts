import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, before, test } from "node:test";
import * as s3 from "@aws-sdk/client-s3";
import type { TestPlatform } from "../../core/testing/platform.js";
import { createAccount, hit, logEntries, startPlatform, uploadScript } from "../../workers/testing/helpers.js";
import { eventually } from "../../core/testing/eventually.js";
import { withTempDir } from "../../core/testing/temp-dir.js";
import { runWrangler, wranglerSucceeded } from "../../workers/testing/wrangler.js";
import { bootstrapS3Credentials, s3Client } from "../s3/testing/s3.js";

// R2 event notifications end to end: rules set through the v4 API and the real wrangler 3, object changes made through
// a Worker's R2 binding, the v4 object API and the S3 API (AWS SDK), and a consumer Worker on the platform's workerd
// whose queue() handler logs every message it receives.
let p: TestPlatform;
let client: s3.S3Client;
const BUCKET = "evented";
const md5 = (s: string) => createHash("md5").update(s).digest("hex");

const WRITER = `
export default {
  async fetch(req, env) {
    const u = new URL(req.url);
    const key = u.searchParams.get("key");
    if (req.method === "DELETE") { await env.B.delete(key); return new Response("deleted"); }
    const o = await env.B.put(key, await req.text());
    return new Response(o.etag);
  },
};
`;

const CONSUMER = `
export default {
  async fetch() { return new Response("consumer"); },
  async queue(batch) {
    for (const m of batch.messages) console.log("R2EVENT " + JSON.stringify({ queue: batch.queue, body: m.body }));
  },
};
`;

interface Seen {
  queue: string;
  body: { account: string; action: string; bucket: string; object: { key: string; size?: number; eTag?: string }; eventTime: string; copySource?: unknown };
}

function seen(queue: string): Seen["body"][] {
  return logEntries(p)
    .filter((l) => typeof l.msg === "string" && l.msg.startsWith("R2EVENT ") && l.script === "consumer")
    .map((l) => JSON.parse(l.msg.slice(8)) as Seen)
    .filter((s) => s.queue === queue)
    .map((s) => s.body);
}

/** The messages of `queue` about `key`, without their time (checked to be an ISO date). */
function about(queue: string, key: string): Omit<Seen["body"], "eventTime">[] {
  return seen(queue)
    .filter((b) => b.object.key === key)
    .map(({ eventTime, ...rest }) => {
      assert.ok(Number.isFinite(Date.parse(eventTime)) && eventTime.endsWith("Z"), `eventTime ${eventTime}`);
      return rest;
    });
}

async function createQueue(name: string, accountId = p.accountId, headers?: Record<string, string>): Promise<string> {
  const r = await p.api("POST", `/accounts/${accountId}/queues`, { queue_name: name }, headers);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.result.queue_id as string;
}

const config = (bucket = BUCKET, accountId = p.accountId) => `/accounts/${accountId}/event_notifications/r2/${bucket}/configuration`;

let created: string;
let deleted: string;

before(async () => {
  p = await startPlatform(["--queue-poll-interval", "0.2"]);
  client = await s3Client(p, await bootstrapS3Credentials(p));
  assert.equal((await p.api("POST", `/accounts/${p.accountId}/r2/buckets`, { name: BUCKET })).status, 200);
  created = await createQueue("r2-created");
  deleted = await createQueue("r2-deleted");
  const cons = await uploadScript(p, "consumer", CONSUMER);
  assert.equal(cons.status, 200, JSON.stringify(cons.body));
  for (const q of [created, deleted]) {
    const r = await p.api("POST", `/accounts/${p.accountId}/queues/${q}/consumers`, {
      script_name: "consumer",
      settings: { batch_size: 10, max_wait_time_ms: 100 },
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
  }
  const writer = await uploadScript(p, "writer", WRITER, {
    bindings: [{ type: "r2_bucket", name: "B", bucket_name: BUCKET }],
  });
  assert.equal(writer.status, 200, JSON.stringify(writer.body));
});
after(async () => {
  client?.destroy();
  await p?.dispose();
});

test("the configuration API: rules per queue as the hosted API shows them; overlaps, unknown actions and missing names refused", async () => {
  const put = await p.api("PUT", `${config()}/queues/${created}`, {
    rules: [
      { actions: ["PutObject", "CopyObject", "CompleteMultipartUpload"], prefix: "in/", description: "uploads" },
      { actions: ["PutObject"], prefix: "logs/", suffix: ".txt" },
    ],
  });
  assert.equal(put.status, 200, JSON.stringify(put.body));
  assert.equal(
    (await p.api("PUT", `${config()}/queues/${deleted}`, { rules: [{ actions: ["DeleteObject", "LifecycleDeletion"], prefix: "in/" }] })).status,
    200,
  );

  const got = await p.api("GET", config());
  assert.equal(got.status, 200);
  assert.equal(got.body.result.bucketName, BUCKET);
  const queues = got.body.result.queues as { queueId: string; queueName: string; rules: Record<string, unknown>[] }[];
  assert.deepEqual(
    queues.map((q) => [q.queueId, q.queueName, q.rules.map((r) => [r.actions, r.prefix, r.suffix, r.description])]),
    [
      [
        created,
        "r2-created",
        [
          [["PutObject", "CopyObject", "CompleteMultipartUpload"], "in/", "", "uploads"],
          [["PutObject"], "logs/", ".txt", ""],
        ],
      ],
      [deleted, "r2-deleted", [[["DeleteObject", "LifecycleDeletion"], "in/", "", ""]]],
    ],
  );
  for (const r of queues[0]!.rules) {
    assert.match(String(r.ruleId), /^[0-9a-f-]{36}$/);
    assert.ok(Number.isFinite(Date.parse(String(r.createdAt))));
  }
  const one = await p.api("GET", `${config()}/queues/${deleted}`);
  assert.equal(one.status, 200);
  assert.equal(one.body.result.queueName, "r2-deleted");
  assert.equal(one.body.result.rules.length, 1);

  const refusals: [string, unknown, number, number][] = [
    // in/x matches both this and the first rule for PutObject
    [`${config()}/queues/${deleted}`, { rules: [{ actions: ["PutObject"], prefix: "in/x" }] }, 400, 11014],
    [`${config()}/queues/${deleted}`, { rules: [{ actions: ["GetObject"] }] }, 400, 11014],
    [`${config()}/queues/${deleted}`, { rules: [] }, 400, 11014],
    [`${config()}/queues/${deleted}`, "rules", 400, 11014],
    [`${config("no-such-bucket")}/queues/${deleted}`, { rules: [{ actions: ["PutObject"] }] }, 404, 10085],
    [`${config()}/queues/0123456789abcdef0123456789abcdef`, { rules: [{ actions: ["PutObject"] }] }, 404, 11000],
  ];
  for (const [path, body, status, code] of refusals) {
    const r = await p.api("PUT", path, body);
    assert.equal(r.status, status, `${path} ${JSON.stringify(body)}: ${JSON.stringify(r.body)}`);
    assert.equal(r.body.success, false);
    assert.equal(r.body.errors[0].code, code, JSON.stringify(r.body));
  }
  assert.equal((await p.api("GET", config())).body.result.queues.length, 2, "nothing of a refused request was kept");
});

test("every way an object changes sends the hosted message: binding, v4 API, S3 Put/Copy/CompleteMultipartUpload/Delete/DeleteObjects", async () => {
  // The Worker binding
  const etag = (await hit(p, "writer", "/?key=in/binding", { method: "PUT", body: "from a worker" })).text;
  assert.equal(etag, md5("from a worker"));
  await hit(p, "writer", "/?key=in/binding", { method: "DELETE" });
  // The v4 object API (p.api sends the body as JSON: the object's bytes are the quoted string)
  const v4 = await p.api("PUT", `/accounts/${p.accountId}/r2/buckets/${BUCKET}/objects/in/v4`, "v4 body", { "content-type": "text/plain" });
  assert.equal(v4.status, 200, JSON.stringify(v4.body));
  assert.equal((await p.api("DELETE", `/accounts/${p.accountId}/r2/buckets/${BUCKET}/objects/in/v4`)).status, 200);
  // The S3 API
  await client.send(new s3.PutObjectCommand({ Bucket: BUCKET, Key: "in/s3", Body: "s3 body" }));
  await client.send(new s3.PutObjectCommand({ Bucket: BUCKET, Key: "elsewhere/s3", Body: "no rule matches" }));
  await client.send(new s3.CopyObjectCommand({ Bucket: BUCKET, Key: "in/copy", CopySource: `${BUCKET}/elsewhere/s3` }));
  const upload = await client.send(new s3.CreateMultipartUploadCommand({ Bucket: BUCKET, Key: "in/multi" }));
  const part = await client.send(new s3.UploadPartCommand({ Bucket: BUCKET, Key: "in/multi", UploadId: upload.UploadId, PartNumber: 1, Body: "one part" }));
  const done = await client.send(
    new s3.CompleteMultipartUploadCommand({
      Bucket: BUCKET,
      Key: "in/multi",
      UploadId: upload.UploadId,
      MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag }] },
    }),
  );
  await client.send(new s3.DeleteObjectCommand({ Bucket: BUCKET, Key: "in/s3" }));
  await client.send(new s3.DeleteObjectsCommand({ Bucket: BUCKET, Delete: { Objects: [{ Key: "in/copy" }, { Key: "in/multi" }, { Key: "in/never" }] } }));

  const A = p.accountId;
  const expected: [string, string, Omit<Seen["body"], "eventTime">[]][] = [
    ["r2-created", "in/binding", [{ account: A, action: "PutObject", bucket: BUCKET, object: { key: "in/binding", size: 13, eTag: md5("from a worker") } }]],
    ["r2-deleted", "in/binding", [{ account: A, action: "DeleteObject", bucket: BUCKET, object: { key: "in/binding" } }]],
    ["r2-created", "in/v4", [{ account: A, action: "PutObject", bucket: BUCKET, object: { key: "in/v4", size: 9, eTag: md5('"v4 body"') } }]],
    ["r2-deleted", "in/v4", [{ account: A, action: "DeleteObject", bucket: BUCKET, object: { key: "in/v4" } }]],
    ["r2-created", "in/s3", [{ account: A, action: "PutObject", bucket: BUCKET, object: { key: "in/s3", size: 7, eTag: md5("s3 body") } }]],
    ["r2-deleted", "in/s3", [{ account: A, action: "DeleteObject", bucket: BUCKET, object: { key: "in/s3" } }]],
    [
      "r2-created",
      "in/copy",
      [
        {
          account: A,
          action: "CopyObject",
          bucket: BUCKET,
          object: { key: "in/copy", size: 15, eTag: md5("no rule matches") },
          copySource: { bucket: BUCKET, object: "elsewhere/s3" },
        },
      ],
    ],
    ["r2-deleted", "in/copy", [{ account: A, action: "DeleteObject", bucket: BUCKET, object: { key: "in/copy" } }]],
    [
      "r2-created",
      "in/multi",
      [{ account: A, action: "CompleteMultipartUpload", bucket: BUCKET, object: { key: "in/multi", size: 8, eTag: done.ETag!.replaceAll('"', "") } }],
    ],
    ["r2-deleted", "in/multi", [{ account: A, action: "DeleteObject", bucket: BUCKET, object: { key: "in/multi" } }]],
  ];
  await eventually(() => expected.every(([q, key, want]) => about(q, key).length >= want.length), "every change's message delivered", 60_000);
  for (const [q, key, want] of expected) assert.deepEqual(about(q, key), want, `${q} ${key}`);
  assert.deepEqual(about("r2-created", "elsewhere/s3"), [], "no rule matches elsewhere/");
  assert.deepEqual(about("r2-deleted", "in/never"), [], "deleting a key that was not there changes nothing");
});

test("tenancy: a rule names a queue and a bucket of the same account only; one account never sees another's rules", async () => {
  const other = await createAccount(p, "tenant-b");
  const keyHeaders = p.keyHeaders();
  const otherQueue = await createQueue("b-queue", other, keyHeaders);
  assert.equal((await p.api("POST", `/accounts/${other}/r2/buckets`, { name: BUCKET }, keyHeaders)).status, 200);
  // Account A's bucket with account B's queue, and B's bucket with A's queue: no such queue in the account.
  const crossA = await p.api("PUT", `${config()}/queues/${otherQueue}`, { rules: [{ actions: ["PutObject"], prefix: "b/" }] });
  assert.equal(crossA.status, 404, JSON.stringify(crossA.body));
  assert.equal(crossA.body.errors[0].code, 11000);
  const crossB = await p.api("PUT", `${config(BUCKET, other)}/queues/${created}`, { rules: [{ actions: ["PutObject"] }] }, keyHeaders);
  assert.equal(crossB.status, 404, JSON.stringify(crossB.body));
  // B's own rule on its own bucket of the same name: A's listing does not show it, and A's writes do not fire it.
  assert.equal((await p.api("PUT", `${config(BUCKET, other)}/queues/${otherQueue}`, { rules: [{ actions: ["PutObject"] }] }, keyHeaders)).status, 200);
  const listedB = await p.api("GET", config(BUCKET, other), undefined, keyHeaders);
  assert.deepEqual(
    listedB.body.result.queues.map((q: { queueName: string }) => q.queueName),
    ["b-queue"],
  );
  assert.ok(!(await p.api("GET", config())).body.result.queues.some((q: { queueName: string }) => q.queueName === "b-queue"));
  // A's token does not reach B's configuration at all.
  assert.equal((await p.api("GET", config(BUCKET, other))).status, 403);
});

test("the real wrangler 3: r2 bucket notification create, list and delete (one rule, then all of a queue)", async () => {
  await withTempDir("edge-r2-notify-", async (cwd) => {
    const ok = wranglerSucceeded;
    assert.equal((await p.api("POST", `/accounts/${p.accountId}/r2/buckets`, { name: "wrangled" })).status, 200);
    await createQueue("wrangled-q");
    ok(
      await runWrangler(
        p,
        [
          "r2",
          "bucket",
          "notification",
          "create",
          "wrangled",
          "--event-type",
          "object-create",
          "--queue",
          "wrangled-q",
          "--prefix",
          "up/",
          "--description",
          "from wrangler",
        ],
        { cwd },
      ),
    );
    ok(
      await runWrangler(
        p,
        ["r2", "bucket", "notification", "create", "wrangled", "--event-type", "object-delete", "--queue", "wrangled-q", "--suffix", ".tmp"],
        { cwd },
      ),
    );
    const overlapping = await runWrangler(p, ["r2", "bucket", "notification", "create", "wrangled", "--event-type", "object-create", "--queue", "wrangled-q"], {
      cwd,
    });
    assert.notEqual(overlapping.code, 0, "an overlapping rule is refused");
    assert.match(overlapping.stdout + overlapping.stderr, /11014/);

    const listed = ok(await runWrangler(p, ["r2", "bucket", "notification", "list", "wrangled"], { cwd })).stdout;
    assert.match(listed, /queue_name:\s+wrangled-q/);
    assert.match(listed, /prefix:\s+up\//);
    assert.match(listed, /event_type:\s+PutObject,CompleteMultipartUpload,CopyObject/);
    assert.match(listed, /suffix:\s+\.tmp/);
    assert.match(listed, /event_type:\s+DeleteObject,LifecycleDeletion/);
    const rules = (await p.api("GET", config("wrangled"))).body.result.queues[0].rules as { ruleId: string; description: string; actions: string[] }[];
    assert.equal(rules[0]!.description, "from wrangler");

    const deleteRule = rules.find((r) => r.actions.includes("DeleteObject"))!;
    ok(await runWrangler(p, ["r2", "bucket", "notification", "delete", "wrangled", "--queue", "wrangled-q", "--rule", deleteRule.ruleId], { cwd }));
    assert.deepEqual(
      (await p.api("GET", config("wrangled"))).body.result.queues[0].rules.map((r: { ruleId: string }) => r.ruleId),
      [rules.find((r) => r !== deleteRule)!.ruleId],
    );
    ok(await runWrangler(p, ["r2", "bucket", "notification", "delete", "wrangled", "--queue", "wrangled-q"], { cwd }));
    assert.deepEqual((await p.api("GET", config("wrangled"))).body.result.queues, []);
  });
});

test("deleting a queue removes the rules that send to it; deleting a bucket removes its rules", async () => {
  assert.equal((await p.api("POST", `/accounts/${p.accountId}/r2/buckets`, { name: "short-lived" })).status, 200);
  const q = await createQueue("short-lived-q");
  assert.equal((await p.api("PUT", `${config("short-lived")}/queues/${q}`, { rules: [{ actions: ["PutObject"] }] })).status, 200);
  assert.equal((await p.api("PUT", `${config()}/queues/${q}`, { rules: [{ actions: ["PutObject"], prefix: "other/" }] })).status, 200);
  assert.equal((await p.api("DELETE", `/accounts/${p.accountId}/queues/${q}`)).status, 200);
  assert.deepEqual((await p.api("GET", config("short-lived"))).body.result.queues, []);
  assert.ok(!(await p.api("GET", config())).body.result.queues.some((x: { queueId: string }) => x.queueId === q));

  const q2 = await createQueue("short-lived-q2");
  assert.equal((await p.api("PUT", `${config("short-lived")}/queues/${q2}`, { rules: [{ actions: ["PutObject"] }] })).status, 200);
  assert.equal((await p.api("DELETE", `/accounts/${p.accountId}/r2/buckets/short-lived`)).status, 200);
  assert.equal((await p.api("POST", `/accounts/${p.accountId}/r2/buckets`, { name: "short-lived" })).status, 200);
  assert.deepEqual((await p.api("GET", config("short-lived"))).body.result.queues, [], "a new bucket of that name starts with no rules");
});
