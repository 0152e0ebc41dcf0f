import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import { test } from "node:test";
import * as s3 from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import { startTwoNodes } from "../core/testing/two-nodes.js";
import { bootstrapS3Credentials, s3Client } from "./s3/testing/s3.js";

const HANG_GUARD = { timeout: 300_000 };
const MiB = 1024 * 1024;
const md5 = (b: Buffer) => createHash("md5").update(b).digest("hex");

test(
  "two nodes on one PostgreSQL and one bucket: objects put through S3 on one are read on the other with the same ETag and listed by its v4 API",
  HANG_GUARD,
  async (t) => {
    const nodes = await startTwoNodes(t);
    if (!nodes) return;
    const [one, two] = nodes;
    const s3Credentials = await bootstrapS3Credentials(one);
    const [client1, client2] = await Promise.all([s3Client(one, s3Credentials), s3Client(two, s3Credentials)]);
    t.after(() => (client1.destroy(), client2.destroy()));

    await client1.send(new s3.CreateBucketCommand({ Bucket: "shared" }));
    const small = Buffer.from("put on node one");
    const put = await client1.send(new s3.PutObjectCommand({ Bucket: "shared", Key: "docs/small.txt", Body: small, ContentType: "text/plain" }));
    // Larger than lib-storage's 5 MiB part: a multipart upload whose parts are stored in the object store as they come.
    const big = randomBytes(12 * MiB + 123);
    const done = await new Upload({
      client: client1,
      params: { Bucket: "shared", Key: "docs/big.bin", Body: Readable.from([big.subarray(0, 7 * MiB), big.subarray(7 * MiB)]) },
      partSize: 5 * MiB,
    }).done();
    assert.match(String(done.ETag), /^"[0-9a-f]{32}-3"$/);

    const gotSmall = await client2.send(new s3.GetObjectCommand({ Bucket: "shared", Key: "docs/small.txt" }));
    assert.equal(gotSmall.ETag, put.ETag);
    assert.equal(gotSmall.ContentType, "text/plain");
    assert.equal(await gotSmall.Body!.transformToString(), small.toString());
    const gotBig = await client2.send(new s3.GetObjectCommand({ Bucket: "shared", Key: "docs/big.bin" }));
    assert.equal(gotBig.ETag, done.ETag);
    assert.equal(md5(Buffer.from(await gotBig.Body!.transformToByteArray())), md5(big), "node two serves the bytes node one stored");
    const ranged = await client2.send(new s3.GetObjectCommand({ Bucket: "shared", Key: "docs/big.bin", Range: `bytes=${5 * MiB - 10}-${5 * MiB + 9}` }));
    assert.ok(Buffer.from(await ranged.Body!.transformToByteArray()).equals(big.subarray(5 * MiB - 10, 5 * MiB + 10)), "a range across two parts");

    const listed = await two.api("GET", `/accounts/${two.accountId}/r2/buckets/shared/objects?prefix=docs/`);
    assert.equal(listed.status, 200);
    assert.deepEqual(
      listed.body.result.map((o: { key: string; etag: string; size: number }) => [o.key, `"${o.etag}"`, o.size]),
      [
        ["docs/big.bin", done.ETag, big.length],
        ["docs/small.txt", put.ETag, small.length],
      ],
    );

    // A delete on node two is seen by node one at once (no node caches object rows).
    await client2.send(new s3.DeleteObjectCommand({ Bucket: "shared", Key: "docs/small.txt" }));
    await assert.rejects(client1.send(new s3.HeadObjectCommand({ Bucket: "shared", Key: "docs/small.txt" })), (e: Error) => e.name === "NotFound");
  },
);

test(
  "two nodes: an event notification rule set through one fires for writes through the other (its rules reloaded on the bus notice)",
  HANG_GUARD,
  async (t) => {
    const nodes = await startTwoNodes(t);
    if (!nodes) return;
    const [one, two] = nodes;
    const A = one.accountId;
    assert.equal((await one.api("POST", `/accounts/${A}/r2/buckets`, { name: "noticed" })).status, 200);
    const queueId = (await one.api("POST", `/accounts/${A}/queues`, { queue_name: "noticed-q" })).body.result.queue_id as string;
    assert.equal((await one.api("POST", `/accounts/${A}/queues/${queueId}/consumers`, { type: "http_pull" })).status, 200);
    // Node two writes before the rule exists: its index holds no rules for the bucket yet.
    assert.equal((await two.api("PUT", `/accounts/${A}/r2/buckets/noticed/objects/before`, "before")).status, 200);
    const rule = await one.api("PUT", `/accounts/${A}/event_notifications/r2/noticed/configuration/queues/${queueId}`, {
      rules: [{ actions: ["PutObject"], prefix: "after/" }],
    });
    assert.equal(rule.status, 200, JSON.stringify(rule.body));
    // The notice reaches node two within milliseconds; until it does, a write there is matched against no rules, so
    // writes go on until one is reported.
    let n = 0;
    let keys: string[] = [];
    const deadline = Date.now() + 60_000;
    while (keys.length === 0 && Date.now() < deadline) {
      assert.equal((await two.api("PUT", `/accounts/${A}/r2/buckets/noticed/objects/after/${n++}`, "x")).status, 200);
      const pulled = await one.api("POST", `/accounts/${A}/queues/${queueId}/messages/pull`, { batch_size: 100, visibility_timeout_ms: 60_000 });
      keys = (pulled.body.result.messages as { body: string }[]).map((m) => JSON.parse(m.body).object.key as string);
      if (keys.length === 0) await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(keys.length > 0, "a write through node two was reported");
    for (const key of keys) assert.match(key, /^after\/\d+$/, "only keys the rule matches, written after it");
  },
);
