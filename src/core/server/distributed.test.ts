import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { test } from "node:test";
import { newTestCredentials, runCli, startTestPlatform, type TestPlatform } from "../testing/platform.js";
import { awsEnv, privatePostgres, testBucket, testDatabase } from "../testing/services.js";

const HANG_GUARD = { timeout: 240_000 };
const SECRETS_KEY = randomBytes(32).toString("base64");

/** Resolves when `check` resolves true, polling; the deadline only guards against a hang. */
async function until(check: () => Promise<boolean>, what: string, deadlineMs = 60_000): Promise<void> {
  const start = Date.now();
  while (!(await check())) {
    if (Date.now() - start > deadlineMs) assert.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

test("two nodes on one PostgreSQL and one bucket: one bootstrap, tokens made and revoked on one are seen by the other", HANG_GUARD, async (t) => {
  const db = await testDatabase(t);
  const bucket = db && (await testBucket(t));
  if (!db || !bucket) return;
  const credentials = newTestCredentials();
  const env = { EDGE_DATABASE_URL: db.url, EDGE_OBJECT_STORE_URL: bucket.url, EDGE_SECRETS_KEY: SECRETS_KEY, ...awsEnv(bucket.server) };
  const nodes: TestPlatform[] = [];
  t.after(() => Promise.all(nodes.map((n) => n.dispose())));
  // Started together: whichever takes the lock first bootstraps, the other finds the same credentials.
  nodes.push(...(await Promise.all([startTestPlatform({ env, credentials }), startTestPlatform({ env, credentials })])));
  const [a, b] = nodes;
  const printed = nodes.filter((n) => n.output().includes("First start: created an account"));
  assert.equal(printed.length, 1, "credentials are printed by the node that created them only");
  for (const n of nodes) {
    assert.match(
      n.output(),
      /backend\s+rows in PostgreSQL postgres:\/\/postgres@127\.0\.0\.1:\d+\/edge_test_\w+, bodies in s3:\/\/edge-test-\w+ at http:\/\/127\.0\.0\.1:\d+/,
    );
    assert.ok(!n.output().includes(new URL(db.url).password), "the database password is never printed");
    const health = await fetch(`${n.url}/healthz`);
    assert.equal(health.status, 200);
    assert.deepEqual(await health.json(), { status: "ok", dependencies: { postgres: "ok", object_store: "ok" } });
  }

  const created = await a.api("POST", "/user/tokens", { name: "shared", permissions: ["kv_read"], account_id: a.accountId });
  assert.equal(created.status, 200);
  const { id, value } = created.body.result;
  const verify = () => b.api("GET", "/user/tokens/verify", undefined, bearer(value));
  assert.equal((await verify()).status, 200, "a token made on node a works on node b");
  assert.equal((await b.api("DELETE", `/user/tokens/${id}`)).status, 200);
  // Node b has the next token in its credential cache when node a revokes it.
  const again = await a.api("POST", "/user/tokens", { name: "second", permissions: ["kv_read"], account_id: a.accountId });
  const second = again.body.result;
  assert.equal((await b.api("GET", "/user/tokens/verify", undefined, bearer(second.value))).status, 200);
  assert.equal((await a.api("DELETE", `/user/tokens/${second.id}`)).status, 200);
  await until(async () => (await b.api("GET", "/user/tokens/verify", undefined, bearer(second.value))).status !== 200, "node b to refuse the revoked token");
  assert.notEqual((await verify()).status, 200, "the token revoked on node b is refused by node b");

  // A third node with other bootstrap values is refused, and says what to do.
  t.after(() => rmSync(`${a.stateDir}-other`, { recursive: true, force: true }));
  const other = await runCli(["serve", "--port", "0", "--metrics-port", "0", "--dns-port", "0", "--dns-workers", "0", "--state-dir", `${a.stateDir}-other`], {
    env: { ...env, EDGE_BOOTSTRAP_EMAIL: credentials.email, EDGE_BOOTSTRAP_API_TOKEN: newTestCredentials().token },
  });
  assert.equal(other.code, 1);
  assert.match(other.stderr, /set up by another node with a different EDGE_BOOTSTRAP_API_TOKEN\. Start this node with the values the first node used/);
});

test("a database URL without EDGE_SECRETS_KEY is refused before anything starts", async () => {
  const r = await runCli(["serve", "--database-url", "postgres://nobody@127.0.0.1:1/none"], { env: { EDGE_SECRETS_KEY: "" } });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /With --database-url, set EDGE_SECRETS_KEY/);
});

test("PostgreSQL unreachable at start is refused with where it was looked for", async (t) => {
  t.after(() => rmSync(`/tmp/edge-unreachable-${process.pid}`, { recursive: true, force: true }));
  const r = await runCli(["serve", "--port", "0", "--metrics-port", "0", "--dns-port", "0"], {
    env: {
      EDGE_DATABASE_URL: "postgres://edge:hidden-password@127.0.0.1:1/edge",
      EDGE_SECRETS_KEY: SECRETS_KEY,
      EDGE_STATE_DIR: `/tmp/edge-unreachable-${process.pid}`,
    },
  });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /Cannot reach PostgreSQL at postgres:\/\/edge@127\.0\.0\.1:1\/edge: .*Check --database-url/);
  assert.ok(!r.stderr.includes("hidden-password"));
});

test("PostgreSQL stopped: requests that need it are 503s naming it, /healthz says so; started again: the node recovers by itself", HANG_GUARD, async (t) => {
  const server = await privatePostgres(t);
  if (!server) return;
  const node = await startTestPlatform({ env: { EDGE_DATABASE_URL: server.url, EDGE_SECRETS_KEY: SECRETS_KEY } });
  t.after(() => node.dispose());
  assert.equal((await node.api("GET", "/user/tokens")).status, 200);

  server.stop();
  const listed = await node.api("GET", "/user/tokens");
  assert.equal(listed.status, 503);
  assert.deepEqual(listed.body.errors, [{ code: 10002, message: "PostgreSQL is unreachable from this node; the request was not carried out, retry it later" }]);
  const health = await fetch(`${node.url}/healthz`);
  assert.equal(health.status, 503);
  assert.deepEqual(await health.json(), { status: "degraded", dependencies: { postgres: "unreachable" } });

  await server.start();
  await until(async () => (await fetch(`${node.url}/healthz`)).status === 200, "/healthz to be 200 again");
  assert.equal((await node.api("GET", "/user/tokens")).status, 200);
});

test("an object store bucket that does not exist is refused at start, saying to create it", async (t) => {
  const bucket = await testBucket(t);
  if (!bucket) return;
  const stateDir = `/tmp/edge-nobucket-${process.pid}`;
  t.after(() => rmSync(stateDir, { recursive: true, force: true }));
  const missing = bucket.url.replace(bucket.name, `${bucket.name}-missing`);
  const r = await runCli(["serve", "--port", "0", "--metrics-port", "0", "--dns-port", "0", "--state-dir", stateDir], {
    env: { EDGE_OBJECT_STORE_URL: missing, ...awsEnv(bucket.server) },
  });
  assert.equal(r.code, 1);
  assert.match(
    r.stderr,
    /Cannot use the object store s3:\/\/edge-test-\w+-missing at http:\/\/127\.0\.0\.1:\d+ \(us-east-1\): the bucket does not exist \(create it first\)/,
  );
});
