import assert from "node:assert/strict";
import { createServer, type AddressInfo } from "node:net";
import { Readable } from "node:stream";
import { test } from "node:test";
import { CreateMultipartUploadCommand, ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3";
import { dependencyRefusal } from "../errors/dependency.js";
import { testContentStore } from "../testing/backends.js";
import { s3ClientConfig } from "../testing/services.js";
import { createObjectStoreClient, S3ContentStore } from "./s3-store.js";
import { describeContentStore } from "./store.contract.js";

describeContentStore("S3 (Ceph RGW)", async (t) => {
  const store = await testContentStore(t, "kv");
  return store && { store, close() {} };
});

test("bodies live under <area>/<id> in the bucket; gc aborts multipart uploads a crashed node left, and leaves other areas alone", async (t) => {
  const store = await testContentStore(t, "r2");
  if (!store) return;
  const client = new S3Client(s3ClientConfig(store.testBucket.server));
  t.after(() => client.destroy());
  const other = new S3ContentStore(client, store.testBucket.name, "kv/");
  const mine = await store.put(Buffer.from("r2 body"));
  const theirs = await other.put(Buffer.from("kv body"));
  const keys = async () => ((await client.send(new ListObjectsV2Command({ Bucket: store.testBucket.name }))).Contents ?? []).map((o) => o.Key).sort();
  assert.deepEqual(await keys(), [`kv/${theirs.id}`, `r2/${mine.id}`].sort());

  await client.send(new CreateMultipartUploadCommand({ Bucket: store.testBucket.name, Key: `r2/${"e".repeat(40)}` }));
  assert.equal(await store.gc(() => true, 3600_000), 0, "a young upload may still be under way");
  assert.equal(await store.gc(() => true, -60_000), 1, "the abandoned upload, not the live body");
  assert.equal(await store.gc(() => false, -60_000), 1);
  assert.deepEqual(await keys(), [`kv/${theirs.id}`]);
});

test("an object store that does not answer is a 503 naming it, for writes, reads and streams", async (t) => {
  const port = await new Promise<number>((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const p = (s.address() as AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
  process.env.AWS_ACCESS_KEY_ID ??= "unused";
  process.env.AWS_SECRET_ACCESS_KEY ??= "unused";
  const client = createObjectStoreClient({ bucket: "edge", endpoint: `http://127.0.0.1:${port}`, region: "us-east-1" });
  t.after(() => client.destroy());
  const store = new S3ContentStore(client, "edge", "kv/");
  const failures = [
    () => store.put(Buffer.from("x")),
    () => store.put(Readable.from([Buffer.from("streamed")])),
    () => store.readAll("a".repeat(40)),
    async () => {
      for await (const _ of store.read("a".repeat(40))) void _;
    },
    () => store.gc(() => false),
  ];
  for (const failure of failures) {
    const err = await failure().then(
      () => assert.fail("expected a failure"),
      (e: unknown) => e,
    );
    assert.equal(dependencyRefusal(err)?.message, "object store is unreachable from this node; the request was not carried out, retry it later", String(err));
  }
});
