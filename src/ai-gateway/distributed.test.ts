import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";
import pg from "pg";
import { newTestCredentials, type TestPlatform } from "../core/testing/platform.js";
import { privatePostgres } from "../core/testing/services.js";
import { callGateway, chatBody, createGateway, createToken, startGatewayPlatform, updateGateway } from "./testing/helpers.js";
import { startMockProvider } from "./testing/mock-provider.js";

const HANG_GUARD = { timeout: 300_000 };

/** Resolves when `check` resolves true, polling; the deadline only guards against a hang. */
async function until(check: () => Promise<boolean>, what: string, deadlineMs = 60_000): Promise<void> {
  const start = Date.now();
  while (!(await check())) {
    if (Date.now() - start > deadlineMs) assert.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

test(
  "the AI gateway on two nodes sharing PostgreSQL: one gateway, its settings, one rate-limit counter and one log list; PostgreSQL stopped and back",
  HANG_GUARD,
  async (t) => {
    const server = await privatePostgres(t);
    if (!server) return;
    const provider = await startMockProvider();
    t.after(() => provider.close());
    const credentials = newTestCredentials();
    const env = { EDGE_DATABASE_URL: server.url, EDGE_SECRETS_KEY: randomBytes(32).toString("base64") };
    const nodes: TestPlatform[] = [];
    t.after(() => Promise.all(nodes.map((n) => n.dispose())));
    const start = () => startGatewayPlatform([`openai=${provider.url}`], { env, credentials });
    nodes.push(...(await Promise.all([start(), start()])));
    const [a, b] = nodes as [TestPlatform, TestPlatform];
    const acct = a.accountId;
    const chat = (node: TestPlatform, gateway: string, headers: Record<string, string> = {}) =>
      callGateway(`${node.url}/v1/${acct}/${gateway}/openai/chat/completions`, { headers, body: chatBody("hi") });
    const gatewayOn = async (node: TestPlatform, id: string) => (await node.api("GET", `/accounts/${acct}/ai-gateway/gateways/${id}`)).body.result;

    // Made through a, used through b.
    await createGateway(a, "shared");
    const first = await chat(b, "shared");
    assert.equal(first.status, 200, first.text);
    assert.equal(provider.requests.length, 1);

    // Authentication turned on through a: b, which has the settings in memory, refuses a request without a token.
    const token = await createToken(a, ["ai_gateway_run"]);
    const auth = { "gw-aig-authorization": `Bearer ${token.value}` };
    assert.equal((await chat(b, "shared", auth)).status, 200, "b knows a's token (and caches it)");
    const changedAt = Date.now();
    await updateGateway(a, "shared", { authentication: true });
    await until(async () => (await chat(b, "shared")).status === 401, "node b to enforce the authentication set on node a");
    t.diagnostic(`node b enforced node a's change ${Date.now() - changedAt} ms after it was answered`);
    assert.equal((await chat(b, "shared", auth)).status, 200);

    // Logs written through both nodes are listed by either.
    for (const [node, name] of [
      [a, "a"],
      [b, "b"],
    ] as const) {
      const r = await chat(node, "shared", { ...auth, "gw-aig-metadata": JSON.stringify({ node: name }) });
      assert.equal(r.status, 200);
    }
    const loggedNodes = async (node: TestPlatform) => {
      const r = await node.api("GET", `/accounts/${acct}/ai-gateway/gateways/shared/logs?per_page=50`);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return new Set((r.body.result as { metadata: { node?: string } | null }[]).map((l) => l.metadata?.node).filter(Boolean));
    };
    for (const node of [a, b]) await until(async () => (await loggedNodes(node)).size === 2, "both nodes' logs in one list");

    // A limit of 6 per day, changed through a: requests spread over both nodes let exactly 6 through.
    const msToNextDay = 86_400_000 - (Date.now() % 86_400_000);
    if (msToNextDay < 120_000) await new Promise((resolve) => setTimeout(resolve, msToNextDay + 1000)); // not across a window boundary
    await updateGateway(a, "shared", { rate_limiting_limit: 6, rate_limiting_interval: 86_400, rate_limiting_technique: "fixed" });
    await until(async () => (await gatewayOn(b, "shared")).rate_limiting_limit === 6, "node b to see the limit");
    const statuses = await Promise.all(Array.from({ length: 14 }, (_, i) => chat(i % 2 ? a : b, "shared", auth).then((r) => r.status)));
    assert.deepEqual(statuses.filter((s) => s === 200).length, 6, `one counter for both nodes: ${statuses.join(" ")}`);
    assert.equal(statuses.filter((s) => s === 429).length, 8);

    // A gateway without a limit, known to b, for the outage. b must have heard the notice of its creation before the
    // check below, or that late notice would make b read it again: notices arrive in commit order, so once b has
    // heard about "marker" (made after "free", and known to b as missing) it has heard about "free" too.
    const missing = (await chat(b, "marker")).status;
    assert.equal(missing, 404, "b knows that marker does not exist (yet)");
    await createGateway(a, "free");
    await createGateway(a, "marker");
    await until(async () => (await chat(b, "marker")).status === 200, "node b to hear that marker was created");
    assert.equal((await chat(b, "free")).status, 200);

    // A change whose notice a node missed (made behind the nodes' back, as if sent while b's listening connection was
    // down) is picked up when the bus reconnects: the resync reloads every gateway.
    const admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
    try {
      await admin.query(`UPDATE ai_gateway.gateways SET settings = jsonb_set(settings::jsonb, '{authentication}', 'true')::text WHERE id = 'free'`);
      assert.equal((await chat(b, "free")).status, 200, "without a notice, b still has the old settings");
      await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE 'edge-bus %'");
    } finally {
      await admin.end();
    }
    await until(async () => (await chat(b, "free")).status === 401, "node b to reload the gateway after its bus reconnected");
    await updateGateway(a, "free", { authentication: false });
    await until(async () => (await chat(b, "free")).status === 200, "node b to hear changes again");

    server.stop();
    // A limit cannot be counted without PostgreSQL: refused, naming it.
    const limited = await chat(b, "shared", auth);
    assert.equal(limited.status, 503);
    assert.deepEqual(limited.json.errors, [
      { code: 10002, message: "PostgreSQL is unreachable from this node; the request was not carried out, retry it later" },
    ]);
    const listed = await a.api("GET", `/accounts/${acct}/ai-gateway/gateways/shared/logs`);
    assert.equal(listed.status, 503);
    // A gateway whose settings b has in memory and that has no limit is still served; its log waits for PostgreSQL.
    const served = await chat(b, "free", { "gw-aig-metadata": JSON.stringify({ node: "outage" }) });
    assert.equal(served.status, 200, served.text);
    // A gateway b never saw needs PostgreSQL to be read.
    const unknown = await chat(b, "never-seen");
    assert.equal(unknown.status, 503);

    await server.start();
    await until(async () => (await chat(b, "shared", auth)).status === 429, "node b to count on PostgreSQL again (the day's 6 are used)", 90_000);
    await until(async () => {
      const r = await a.api("GET", `/accounts/${acct}/ai-gateway/gateways/free/logs`);
      return r.status === 200 && r.body.result.some((l: { metadata: { node?: string } | null }) => l.metadata?.node === "outage");
    }, "the log made during the outage to be written and listed by node a");
  },
);

test("stored provider keys on two nodes sharing PostgreSQL: added, replaced and deleted through one node, used through the other", HANG_GUARD, async (t) => {
  const server = await privatePostgres(t);
  if (!server) return;
  const provider = await startMockProvider();
  t.after(() => provider.close());
  const credentials = newTestCredentials();
  const env = { EDGE_DATABASE_URL: server.url, EDGE_SECRETS_KEY: randomBytes(32).toString("base64") };
  const nodes: TestPlatform[] = [];
  t.after(() => Promise.all(nodes.map((n) => n.dispose())));
  const start = () => startGatewayPlatform([`openai=${provider.url}`], { env, credentials });
  nodes.push(...(await Promise.all([start(), start()])));
  const [a, b] = nodes as [TestPlatform, TestPlatform];
  const keys = `/accounts/${a.accountId}/ai-gateway/gateways/keyed/provider_configs`;
  await createGateway(a, "keyed", { authentication: true });
  const token = await createToken(a, ["ai_gateway_run"]);
  /** What the provider saw as the key of a request without one, sent through b. */
  const keyUsedByB = async () => {
    const r = await callGateway(`${b.url}/v1/${a.accountId}/keyed/openai/chat/completions`, {
      headers: { "gw-aig-authorization": `Bearer ${token.value}` },
      body: chatBody("hi"),
    });
    assert.equal(r.status, 200, r.text);
    return provider.requests.at(-1)!.headers.authorization;
  };
  assert.equal(await keyUsedByB(), undefined, "b has read that the gateway has no keys");

  const added = await a.api("POST", keys, { provider_slug: "openai", alias: "default", default_config: true, secret: "sk-distributed-1" });
  assert.equal(added.status, 200, JSON.stringify(added.body));
  await until(async () => (await keyUsedByB()) === "Bearer sk-distributed-1", "node b to use the key added through a");
  assert.equal((await b.api("GET", keys)).body.result[0].id, added.body.result.id);

  assert.equal((await a.api("PUT", `${keys}/${added.body.result.id}`, { secret: "sk-distributed-2" })).status, 200);
  await until(async () => (await keyUsedByB()) === "Bearer sk-distributed-2", "node b to use the key replaced through a");

  const admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  try {
    const rows = await admin.query("SELECT secret FROM ai_gateway.provider_keys");
    assert.equal(rows.rows.length, 1);
    assert.ok(!String(rows.rows[0].secret).includes("sk-distributed"), "the key is sealed at rest");
  } finally {
    await admin.end();
  }

  assert.equal((await a.api("DELETE", `${keys}/${added.body.result.id}`)).status, 200);
  await until(async () => (await keyUsedByB()) === undefined, "node b to stop using the key deleted through a");
});
