import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test, type TestContext } from "node:test";
import { newTestCredentials, startTestPlatform, type TestPlatform } from "../core/testing/platform.js";
import { until } from "../core/testing/cluster-load.js";
import { awsEnv, testBucket, testDatabase } from "../core/testing/services.js";
import { KV_LIMITS } from "./limits.js";

const HANG_GUARD = { timeout: 240_000 };

/** The promise of docs/kv.md: a change through one node is read through every other within 60 s (the read cache's max age). */
const PROMISED_MS = 60_000;

/** Two `edgecli serve` nodes on a fresh database and bucket; undefined when the services are missing (skipped). */
async function twoNodes(t: TestContext): Promise<[TestPlatform, TestPlatform] | undefined> {
  const db = await testDatabase(t);
  const bucket = db && (await testBucket(t));
  if (!db || !bucket) return undefined;
  const credentials = newTestCredentials();
  const args = ["--database-url", db.url, "--object-store-url", bucket.url];
  const env = { EDGE_SECRETS_KEY: randomBytes(32).toString("base64"), ...awsEnv(bucket.server) };
  const nodes: TestPlatform[] = [];
  t.after(() => Promise.all(nodes.map((n) => n.dispose())));
  nodes.push(...(await Promise.all([startTestPlatform({ args, env, credentials }), startTestPlatform({ args, env, credentials })])));
  return nodes as [TestPlatform, TestPlatform];
}

test("KV on two nodes sharing PostgreSQL and a bucket: what one node writes (small, 200 KB, bulk) the other reads", HANG_GUARD, async (t) => {
  const nodes = await twoNodes(t);
  if (!nodes) return;
  const [a, b] = nodes;
  const ns = `/accounts/${a.accountId}/storage/kv/namespaces`;

  const created = await a.api("POST", ns, { title: "shared" });
  assert.equal(created.status, 200);
  const id: string = created.body.result.id;
  assert.equal((await b.api("GET", `${ns}/${id}`)).body.result.title, "shared", "the namespace made on node a is node b's too");

  const putValue = async (node: TestPlatform, key: string, value: Buffer) => {
    const res = await fetch(`${node.apiUrl}${ns}/${id}/values/${encodeURIComponent(key)}`, {
      method: "PUT",
      headers: node.headers({ "content-type": "application/octet-stream" }),
      body: value,
    });
    assert.equal(res.status, 200, await res.text());
  };
  const getValue = async (node: TestPlatform, key: string) => {
    const res = await fetch(`${node.apiUrl}${ns}/${id}/values/${encodeURIComponent(key)}`, { headers: node.headers() });
    return { status: res.status, value: Buffer.from(await res.arrayBuffer()) };
  };

  await putValue(a, "small", Buffer.from("from node a"));
  assert.equal((await getValue(b, "small")).value.toString(), "from node a");
  // 200 KB: over the inline limit, so its bytes are in the bucket and its row names them.
  const large = randomBytes(200 * 1024);
  assert.ok(large.length > KV_LIMITS.inlineValueBytes);
  await putValue(a, "large", large);
  const read = await getValue(b, "large");
  assert.equal(read.status, 200);
  assert.ok(read.value.equals(large), "node b reads node a's 200 KB value byte for byte");

  const bulk = Array.from({ length: 300 }, (_, i) => ({ key: `bulk/${i}`, value: `v${i}` }));
  bulk.push({ key: "bulk/large", value: large.toString("base64"), base64: true } as never);
  const written = await a.api("PUT", `${ns}/${id}/bulk`, bulk);
  assert.equal(written.status, 200, JSON.stringify(written.body));
  assert.equal(written.body.result.successful_key_count, 301);
  const listed = await b.api("GET", `${ns}/${id}/keys?prefix=bulk/&limit=1000`);
  assert.equal(listed.body.result.length, 301);
  assert.equal((await getValue(b, "bulk/299")).value.toString(), "v299");
  assert.ok((await getValue(b, "bulk/large")).value.equals(large));

  // Deleted on node b: gone on node a, which had read it (its read cache hears of the delete).
  assert.equal((await getValue(a, "large")).status, 200);
  assert.equal((await b.api("DELETE", `${ns}/${id}/values/large`)).status, 200);
  await until(async () => (await getValue(a, "large")).status === 404, "node a to see the delete", PROMISED_MS);
});

test(
  "KV read caches of two nodes: a value node b has read and node a overwrites or deletes is read anew within the promised bound; a token deleted on node a stops working on node b",
  HANG_GUARD,
  async (t) => {
    const nodes = await twoNodes(t);
    if (!nodes) return;
    const [a, b] = nodes;
    const ns = `/accounts/${a.accountId}/storage/kv/namespaces`;
    const id: string = (await a.api("POST", ns, { title: "cached" })).body.result.id;
    const token = await a.api("POST", "/user/tokens", { name: "reader", permissions: ["kv_read"], account_id: a.accountId });
    assert.equal(token.status, 200);
    const reader = { authorization: `Bearer ${token.body.result.value}` };
    const put = async (value: string) => {
      const res = await fetch(`${a.apiUrl}${ns}/${id}/values/hot`, { method: "PUT", headers: a.headers({ "content-type": "text/plain" }), body: value });
      assert.equal(res.status, 200, await res.text());
    };
    const readOnB = async (headers: Record<string, string> = b.headers()) => {
      const res = await fetch(`${b.apiUrl}${ns}/${id}/values/hot`, { headers });
      return { status: res.status, text: await res.text() };
    };

    await put("first");
    // Read through node b a few times: it answers from its cache from now on.
    for (let i = 0; i < 3; i++) assert.deepEqual(await readOnB(reader), { status: 200, text: "first" });
    await put("second");
    await until(async () => (await readOnB()).text === "second", "node b to read the overwrite", PROMISED_MS);
    assert.equal((await a.api("DELETE", `${ns}/${id}/values/hot`)).status, 200);
    await until(async () => (await readOnB()).status === 404, "node b to read the delete", PROMISED_MS);
    await put("third");
    await until(async () => (await readOnB(reader)).text === "third", "node b to read the new value with the token", PROMISED_MS);

    assert.equal((await a.api("DELETE", `/user/tokens/${token.body.result.id}`)).status, 200);
    await until(
      async () => (await readOnB(reader)).status === 401 || (await readOnB(reader)).status === 403,
      "node b to refuse the deleted token",
      PROMISED_MS,
    );
  },
);
