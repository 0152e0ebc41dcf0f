import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";
import { outageSummary, prepareTarget, read, startWriters, until, write, type ClusterTarget, type WriteOutcome } from "../testing/cluster-load.js";
import { newTestCredentials, startTestPlatform, type TestCredentials, type TestPlatform } from "../testing/platform.js";
import { testDatabaseAndBucket } from "../testing/backends.js";
import { awsEnv, privatePostgres, testBucket } from "../testing/services.js";
import { startTcpProxy } from "../testing/tcp-proxy.js";
import { bootstrapS3Credentials, s3Client, s3ErrorOf } from "../../r2/s3/testing/s3.js";

const HANG_GUARD = { timeout: 420_000 };
/** Small values and bodies live in PostgreSQL rows; 100 KB ones in the object store (KV values and R2 bodies over 64 KiB). */
const SIZES = [100, 100 * 1024];
const PG_DOWN = "PostgreSQL is unreachable from this node; the request was not carried out, retry it later";
const STORE_DOWN = "object store is unreachable from this node; the request was not carried out, retry it later";

function cluster(db: { url: string }, bucketUrl: string, server: Parameters<typeof awsEnv>[0]) {
  return { EDGE_DATABASE_URL: db.url, EDGE_OBJECT_STORE_URL: bucketUrl, EDGE_SECRETS_KEY: randomBytes(32).toString("base64"), ...awsEnv(server) };
}

async function startNodes(count: number, env: NodeJS.ProcessEnv, credentials: TestCredentials, nodes: TestPlatform[]) {
  // One at a time: the first makes the schema and the bootstrap credentials; starting the others together only adds
  // to the load of a busy machine (two nodes starting at once are tested in distributed.test.ts).
  for (let i = 0; i < count; i++) nodes.push(await startTestPlatform({ env, credentials }));
}

/** Every acknowledged write reads back whole through `node`; every other one is either there whole or not at all. */
async function checkAllOrNothing(node: TestPlatform, target: ClusterTarget, outcomes: readonly WriteOutcome[]) {
  for (const o of outcomes) {
    const got = await read(node, target, o.kind, o.key);
    if (o.status === 200) assert.deepEqual(got, { status: 200, md5: o.md5, size: o.size }, `acknowledged ${o.kind} ${o.key} (through node ${o.node})`);
    else assert.ok(got.status === 404 || got.md5 === o.md5, `${o.kind} ${o.key}, refused with ${o.status}, is all there or not at all: ${JSON.stringify(got)}`);
  }
}

test(
  "three nodes on one PostgreSQL and one bucket: kill -9 of one while KV and R2 writes go on; every acknowledged write is read through the survivors and through the node restarted",
  HANG_GUARD,
  async (t) => {
    const backends = await testDatabaseAndBucket(t);
    if (!backends) return;
    const { db, bucket } = backends;
    const credentials = newTestCredentials();
    const env = cluster(db, bucket.url, bucket.server);
    const nodes: TestPlatform[] = [];
    t.after(() => Promise.all(nodes.map((n) => n.dispose())));
    await startNodes(3, env, credentials, nodes);
    const target = await prepareTarget(nodes[0]!, "failover");

    let live = [0, 1, 2];
    const writers = startWriters({ nodes, target, pick: (i) => live[i % live.length]!, sizes: SIZES, prefix: "w" });
    // A failed assertion must not leave the writers going until the hang guard.
    t.after(() => writers.stop());
    await until(() => writers.acknowledged() >= 60, "60 acknowledged writes on three nodes");
    // Writes under way through node 0 die with it; no new one goes there.
    live = [1, 2];
    nodes[0]!.process.kill("SIGKILL");
    const atKill = writers.acknowledged();
    await until(() => writers.acknowledged() >= atKill + 60, "60 more acknowledged writes through the survivors");
    const outcomes = await writers.stop();
    t.diagnostic(
      `kill -9: ${outageSummary(outcomes)}; ${outcomes.filter((o) => o.node === 0 && o.status === 200).length} acknowledged through the killed node`,
    );

    for (const o of outcomes) {
      if (o.node === 0) assert.ok(o.status === 200 || typeof o.status === "string", `through the killed node: 200 or a cut connection, not ${o.status}`);
      else assert.equal(o.status, 200, `through a survivor: ${o.kind} ${o.key} ${o.status} ${o.errors.join("; ")}`);
    }
    assert.ok(outcomes.some((o) => o.node === 0 && o.status === 200));
    await checkAllOrNothing(nodes[1]!, target, outcomes);
    await checkAllOrNothing(nodes[2]!, target, outcomes);

    // Restarted on its state directory, the killed node serves every write, and its own writes reach the others.
    const restarted = await startTestPlatform({ stateDir: nodes[0]!.stateDir, env, credentials });
    try {
      await checkAllOrNothing(restarted, target, outcomes);
      const after = await write([restarted], 0, target, "r2", "after-restart", 2048);
      assert.equal(after.status, 200);
      assert.equal((await read(nodes[2]!, target, "r2", "after-restart")).md5, after.md5);
    } finally {
      await restarted.stop();
    }
  },
);

test("PostgreSQL stopped under load on two nodes: 503s naming it, nothing half-written, both nodes recover without a restart", HANG_GUARD, async (t) => {
  const server = await privatePostgres(t);
  const bucket = server && (await testBucket(t));
  if (!server || !bucket) return;
  const credentials = newTestCredentials();
  const nodes: TestPlatform[] = [];
  t.after(() => Promise.all(nodes.map((n) => n.dispose())));
  await startNodes(2, cluster(server, bucket.url, bucket.server), credentials, nodes);
  const pids = nodes.map((n) => n.process.pid);
  const target = await prepareTarget(nodes[0]!, "pg-outage");

  const writers = startWriters({ nodes, target, pick: (i) => i % 2, sizes: SIZES, prefix: "w" });
  // A failed assertion must not leave the writers going until the hang guard.
  t.after(() => writers.stop());
  await until(() => writers.acknowledged() >= 30, "30 acknowledged writes");
  server.stop();
  const stoppedAt = writers.outcomes.length;
  await until(() => writers.outcomes.slice(stoppedAt).filter((o) => o.status === 503).length >= 20, "20 refusals while PostgreSQL is down");
  for (const n of nodes) {
    const health = await fetch(`${n.url}/healthz`);
    assert.equal(health.status, 503);
    assert.deepEqual(await health.json(), { status: "degraded", dependencies: { postgres: "unreachable", object_store: "ok" } });
  }
  const startedAt = Date.now();
  await server.start();
  for (const n of nodes) await until(async () => (await fetch(`${n.url}/healthz`)).status === 200, "/healthz 200 again");
  t.diagnostic(`PostgreSQL start to both nodes healthy: ${Date.now() - startedAt} ms (pg_ctl start included)`);
  const backAt = writers.acknowledged();
  await until(() => writers.acknowledged() >= backAt + 30, "30 acknowledged writes after PostgreSQL is back");
  const outcomes = await writers.stop();

  t.diagnostic(outageSummary(outcomes));
  assert.deepEqual(
    nodes.map((n) => n.process.pid),
    pids,
  );
  assert.ok(
    nodes.every((n) => n.process.exitCode === null && n.process.signalCode === null),
    "no node restarted or died",
  );
  for (const o of outcomes) {
    assert.ok(o.status === 200 || o.status === 503, `${o.kind} ${o.key}: 200 or 503, not ${o.status} ${o.errors.join("; ")}`);
    if (o.status === 503) assert.deepEqual(o.errors, [PG_DOWN]);
  }
  await checkAllOrNothing(nodes[1]!, target, outcomes);
});

test(
  "object store unreachable (a TCP proxy in front of RGW, closed): 503s naming it for large bodies, rows and small bodies still served, recovery without a restart",
  HANG_GUARD,
  async (t) => {
    const backends = await testDatabaseAndBucket(t);
    if (!backends) return;
    const { db, bucket } = backends;
    const proxy = await startTcpProxy(bucket.server.endpoint);
    t.after(() => proxy.close());
    const viaProxy = bucket.url.replace(encodeURIComponent(bucket.server.endpoint), encodeURIComponent(proxy.url));
    assert.notEqual(viaProxy, bucket.url);
    const node = await startTestPlatform({ env: cluster(db, viaProxy, bucket.server) });
    t.after(() => node.dispose());
    const pid = node.process.pid;
    const target = await prepareTarget(node, "store-outage");
    const before = await write([node], 0, target, "r2", "before", 100 * 1024);
    assert.equal(before.status, 200);
    const smallBefore = await write([node], 0, target, "r2", "small-before", 4096);
    assert.equal(smallBefore.status, 200);

    const writers = startWriters({ nodes: [node], target, pick: () => 0, sizes: SIZES, prefix: "w", writers: 2 });
    // A failed assertion must not leave the writers going until the hang guard.
    t.after(() => writers.stop());
    await until(() => writers.acknowledged() >= 20, "20 acknowledged writes");
    await proxy.cut();
    const cutAt = writers.outcomes.length;
    await until(() => writers.outcomes.slice(cutAt).filter((o) => o.status === 503).length >= 10, "10 refusals while the object store is away");

    const health = await fetch(`${node.url}/healthz`);
    assert.equal(health.status, 503);
    assert.deepEqual(await health.json(), { status: "degraded", dependencies: { postgres: "ok", object_store: "unreachable" } });
    const body = await node.api("GET", `/accounts/${target.accountId}/r2/buckets/${target.bucket}/objects/before`);
    assert.equal(body.status, 503, "an object body cannot be read");
    assert.deepEqual(body.body.errors, [{ code: 10002, message: STORE_DOWN }]);
    // The S3 API says the same in its own terms: 503 ServiceUnavailable (which S3 clients retry), not 500, for a
    // GET too (its status waits for the body's first bytes).
    const { GetObjectCommand, PutObjectCommand } = await import("@aws-sdk/client-s3");
    const s3 = await s3Client(node, await bootstrapS3Credentials(node), { maxAttempts: 1 });
    const readViaS3 = await s3ErrorOf(s3.send(new GetObjectCommand({ Bucket: target.bucket, Key: "before" })));
    assert.deepEqual([readViaS3.status, readViaS3.code], [503, "ServiceUnavailable"], readViaS3.message);
    const viaS3 = await s3ErrorOf(s3.send(new PutObjectCommand({ Bucket: target.bucket, Key: "via-s3", Body: randomBytes(100 * 1024) })));
    assert.deepEqual([viaS3.status, viaS3.code], [503, "ServiceUnavailable"], viaS3.message);
    assert.match(viaS3.message, /object store cannot be reached/);
    const listed = await node.api("GET", `/accounts/${target.accountId}/r2/buckets/${target.bucket}/objects?prefix=before`);
    assert.equal(listed.status, 200, "rows are still served: the listing needs PostgreSQL only");
    assert.equal(listed.body.result[0].key, "before");
    const small = await write([node], 0, target, "kv", "small-while-away", 100);
    assert.equal(small.status, 200, "a small KV value lives in its row: written while the store is away");
    const smallObject = await write([node], 0, target, "r2", "small-while-away", 4096);
    assert.equal(smallObject.status, 200, "so does a small R2 body");
    assert.equal((await read(node, target, "r2", "small-before")).md5, smallBefore.md5, "a small object written before is read from its row");

    const restoredAt = Date.now();
    await proxy.restore();
    await until(async () => (await fetch(`${node.url}/healthz`)).status === 200, "/healthz 200 again");
    t.diagnostic(`object store back to node healthy: ${Date.now() - restoredAt} ms`);
    const backAt = writers.acknowledged();
    await until(() => writers.acknowledged() >= backAt + 20, "20 acknowledged writes after the store is back");
    const outcomes = await writers.stop();

    t.diagnostic(outageSummary(outcomes));
    assert.equal(node.process.pid, pid);
    assert.equal(node.process.exitCode, null, "the node did not restart");
    const during = outcomes.slice(cutAt);
    assert.ok(
      during.some((o) => o.kind === "kv" && o.size === 100 && o.status === 200),
      "small KV writes went on while the store was away",
    );
    for (const o of outcomes) {
      assert.ok(o.status === 200 || o.status === 503, `${o.kind} ${o.key}: 200 or 503, not ${o.status} ${o.errors.join("; ")}`);
      if (o.status === 503) {
        assert.deepEqual(o.errors, [STORE_DOWN]);
        assert.ok(o.size > 64 * 1024, "only writes with a body in the store are refused");
      }
    }
    await checkAllOrNothing(node, target, outcomes);
    assert.equal((await read(node, target, "r2", "before")).md5, before.md5, "the object written before the outage is intact");
  },
);
