import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import Cloudflare from "cloudflare";
import OpenAI from "openai";
import type { TestPlatform } from "../../core/testing/platform.js";
import { callGateway, chatBody, createGateway, createToken, startGatewayPlatform } from "../testing/helpers.js";
import { startMockProvider, type MockProvider } from "../testing/mock-provider.js";

/** Stored provider keys (BYOK): the provider_configs API, and requests that carry no provider key of their own. */
describe("AI gateway stored provider keys", () => {
  let mock: MockProvider;
  let p: TestPlatform;
  let cf: Cloudflare;
  let run: { id: string; value: string };
  /** Every secret stored in this file: none may show up in an answer, a log line or the database file in clear. */
  const secrets = new Set<string>();
  const secret = (name: string) => {
    const s = `sk-${name}-${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;
    secrets.add(s);
    return s;
  };
  const keysUrl = (gw: string, accountId = p.accountId) => `/accounts/${accountId}/ai-gateway/gateways/${gw}/provider_configs`;
  const chatUrl = (gw: string, accountId = p.accountId) => `${p.url}/v1/${accountId}/${gw}/openai/chat/completions`;
  const addKey = async (gw: string, body: Record<string, unknown>) => {
    const r = await p.api("POST", keysUrl(gw), body);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body.result as { id: string; secret_id: string; alias: string; default_config: boolean };
  };
  /** What the stand-in provider saw as the credential of the last request. */
  const lastCredential = () => mock.requests.at(-1)!.headers.authorization;
  const noSecretIn = (what: string, text: string) => {
    for (const s of secrets) assert.ok(!text.includes(s), `${what} carries a stored secret`);
  };

  before(async () => {
    mock = await startMockProvider();
    p = await startGatewayPlatform([`openai=${mock.url}`, `anthropic=${mock.url}`]);
    cf = new Cloudflare({ apiToken: p.token, baseURL: p.apiUrl, maxRetries: 0 });
    run = await createToken(p, ["ai_gateway_run"]);
  });
  after(async () => {
    await p?.dispose();
    await mock?.close();
  });

  it("the cloudflare SDK adds and lists keys; answers never carry the key; refusals name the field and write nothing", async () => {
    await createGateway(p, "api", { authentication: true });
    const value = secret("api");
    const created = await cf.aiGateway.providerConfigs.create("api", {
      account_id: p.accountId,
      provider_slug: "openai",
      alias: "default",
      default_config: true,
      secret: value,
      rate_limit: 0,
    });
    assert.equal(created.provider_slug, "openai");
    assert.equal(created.gateway_id, "api");
    assert.equal(created.default_config, true);
    assert.equal(created.secret_preview, "********", "no part of the key is shown");
    noSecretIn("the create answer", JSON.stringify(created));

    const listed = [];
    for await (const k of cf.aiGateway.providerConfigs.list("api", { account_id: p.accountId })) listed.push(k);
    assert.deepEqual(listed, [created]);
    const one = await p.api("GET", `${keysUrl("api")}/${created.id}`);
    assert.deepEqual(one.body.result, created);

    const refusals: [Record<string, unknown>, number, RegExp][] = [
      [{ provider_slug: "openai", alias: "x", default_config: false, secret_id: "abc123" }, 400, /^secret_id: a Secrets Store secret is not supported/],
      [
        { provider_slug: "openai", alias: "x", default_config: false, secret: "sk-1", rate_limit: 10, rate_limit_period: 60 },
        400,
        /^rate_limit: per-key rate limits/,
      ],
      [{ provider_slug: "openai", alias: "x", default_config: false }, 400, /^secret: /],
      [{ provider_slug: "openai", alias: "x", default_config: false, secret: "sk-1\r\nx-evil: 1" }, 400, /^secret: must be the provider's key/],
      [{ provider_slug: "nope", alias: "x", default_config: false, secret: "sk-1" }, 400, /^provider_slug: unknown provider "nope"/],
      [{ provider_slug: "openai", alias: "a b", default_config: false, secret: "sk-1" }, 400, /^alias: /],
      [{ provider_slug: "openai", alias: "default", default_config: false, secret: "sk-1" }, 409, /already has a openai key with the alias "default"/],
    ];
    for (const [body, status, message] of refusals) {
      const r = await p.api("POST", keysUrl("api"), body);
      assert.equal(r.status, status, JSON.stringify(body));
      assert.equal(r.body.success, false);
      assert.match(r.body.errors[0].message, message);
    }
    assert.equal((await p.api("POST", keysUrl("absent"), { provider_slug: "openai", secret: "sk-1" })).status, 404);
    assert.equal((await p.api("GET", keysUrl("api"))).body.result.length, 1, "nothing was written");
  });

  it("the openai SDK with no provider key works through the stored default key; the request's own key wins; an alias picks another", async () => {
    await createGateway(p, "byok", { authentication: true });
    const stored = secret("default");
    const other = secret("team-b");
    await addKey("byok", { provider_slug: "openai", alias: "default", default_config: true, secret: stored });
    await addKey("byok", { provider_slug: "openai", alias: "team-b", default_config: false, secret: other });

    // The SDK insists on an apiKey; Authorization: null keeps it from sending one.
    const client = new OpenAI({
      baseURL: `${p.url}/v1/${p.accountId}/byok/openai`,
      apiKey: "unused",
      defaultHeaders: { Authorization: null, "cf-aig-authorization": `Bearer ${run.value}` },
      maxRetries: 0,
    });
    const chat = await client.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "stored" }] });
    assert.equal(chat.choices[0].message.content, "echo: stored");
    assert.equal(lastCredential(), `Bearer ${stored}`, "the provider saw the stored key");

    const aliased = await client.chat.completions.create(
      { model: "gpt-4o-mini", messages: [{ role: "user", content: "team b" }] },
      { headers: { "cf-aig-byok-alias": "team-b" } },
    );
    assert.equal(aliased.choices[0].message.content, "echo: team b");
    assert.equal(lastCredential(), `Bearer ${other}`);
    assert.ok(!Object.keys(mock.requests.at(-1)!.headers).some((h) => h.includes("aig")), "gateway headers never reach the provider");

    const own = new OpenAI({
      baseURL: `${p.url}/v1/${p.accountId}/byok/openai`,
      apiKey: "sk-callers-own",
      defaultHeaders: { "cf-aig-authorization": `Bearer ${run.value}` },
      maxRetries: 0,
    });
    await own.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "own" }] });
    assert.equal(lastCredential(), "Bearer sk-callers-own", "a key sent with the request is passed through untouched");

    const empty = await callGateway(chatUrl("byok"), { headers: { "gw-aig-token": `Bearer ${run.value}`, authorization: "Bearer " }, body: chatBody() });
    assert.equal(empty.status, 200);
    assert.equal(lastCredential(), `Bearer ${stored}`, "an empty Authorization carries no key");

    const unknown = await callGateway(chatUrl("byok"), { headers: { "gw-aig-token": `Bearer ${run.value}`, "cf-aig-byok-alias": "nope" }, body: chatBody() });
    assert.equal(unknown.status, 400);
    assert.match(unknown.json.errors[0].message, /no stored openai key with the alias "nope"/);
    noSecretIn("a refusal", unknown.text);

    // Without a valid gateway token a stored key is never spent (the gateway answers 401 first here).
    const anonymous = await callGateway(chatUrl("byok"), { body: chatBody() });
    assert.equal(anonymous.status, 401);
  });

  it("on a gateway with authentication off, a stored key is used only for requests with a gateway token", async () => {
    await createGateway(p, "open");
    const stored = secret("open");
    await addKey("open", { provider_slug: "openai", default_config: true, secret: stored });
    const seen = mock.requests.length;
    assert.equal((await callGateway(chatUrl("open"), { body: chatBody() })).status, 200);
    assert.equal(mock.requests.length, seen + 1);
    assert.equal(lastCredential(), undefined, "an anonymous request goes on without a key");
    assert.equal((await callGateway(chatUrl("open"), { headers: { "gw-aig-token": `Bearer ${run.value}` }, body: chatBody() })).status, 200);
    assert.equal(lastCredential(), `Bearer ${stored}`);
  });

  it("a replaced key is used from the next request on; a deleted one, or one of a deleted gateway, no more", async () => {
    await createGateway(p, "rotate", { authentication: true });
    const first = secret("first");
    const k = await addKey("rotate", { provider_slug: "openai", alias: "default", default_config: true, secret: first });
    const call = async () => {
      const r = await callGateway(chatUrl("rotate"), { headers: { "gw-aig-authorization": `Bearer ${run.value}` }, body: chatBody() });
      assert.equal(r.status, 200, r.text);
      return lastCredential();
    };
    assert.equal(await call(), `Bearer ${first}`);
    const second = secret("second");
    const put = await p.api("PUT", `${keysUrl("rotate")}/${k.id}`, { secret: second });
    assert.equal(put.status, 200);
    assert.notEqual(put.body.result.secret_id, k.secret_id);
    noSecretIn("the PUT answer", JSON.stringify(put.body));
    assert.equal(await call(), `Bearer ${second}`);

    const del = await p.api("DELETE", `${keysUrl("rotate")}/${k.id}`);
    assert.equal(del.status, 200);
    assert.equal(await call(), undefined);
    assert.equal((await p.api("DELETE", `${keysUrl("rotate")}/${k.id}`)).status, 404);

    await addKey("rotate", { provider_slug: "openai", default_config: true, secret: secret("gone") });
    assert.match((await call()) ?? "", /^Bearer sk-gone-/);
    assert.equal((await p.api("DELETE", `/accounts/${p.accountId}/ai-gateway/gateways/rotate`)).status, 200);
    await createGateway(p, "rotate", { authentication: true });
    assert.deepEqual((await p.api("GET", keysUrl("rotate"))).body.result, [], "a new gateway of that id has no keys");
    assert.equal(await call(), undefined);
  });

  it("keys belong to one gateway of one account: another account neither reaches nor uses them", async () => {
    await createGateway(p, "shared-id", { authentication: true });
    const mine = secret("mine");
    const k = await addKey("shared-id", { provider_slug: "openai", default_config: true, secret: mine });

    // A second account of the same user, with a gateway of the same id and a Run token of its own.
    const keyAuth = { "x-auth-email": p.email, "x-auth-key": p.apiKey };
    const acc = await callGateway(`${p.apiUrl}/accounts`, { headers: keyAuth, body: { name: "second" } });
    assert.equal(acc.status, 200, acc.text);
    const other = acc.json.result.id as string;
    const gw = await callGateway(`${p.apiUrl}/accounts/${other}/ai-gateway/gateways`, {
      headers: keyAuth,
      body: {
        id: "shared-id",
        cache_ttl: 0,
        cache_invalidate_on_update: false,
        collect_logs: true,
        rate_limiting_interval: 0,
        rate_limiting_limit: 0,
        authentication: true,
      },
    });
    assert.equal(gw.status, 200, gw.text);
    const tok = await callGateway(`${p.apiUrl}/accounts/${other}/tokens`, { headers: keyAuth, body: { name: "run", permissions: ["ai_gateway_run"] } });
    assert.equal(tok.status, 200, tok.text);
    const otherRun = tok.json.result.value as string;

    const theirs = await callGateway(`${p.apiUrl}${keysUrl("shared-id", other)}`, { method: "GET", headers: keyAuth });
    assert.deepEqual(theirs.json.result, [], "the other account's gateway of the same id has none");
    const reach = await callGateway(`${p.apiUrl}${keysUrl("shared-id", other)}/${k.id}`, { method: "DELETE", headers: keyAuth });
    assert.equal(reach.status, 404, "a key id of one account is not found under another");
    const viaToken = await p.api("GET", keysUrl("shared-id", other));
    assert.ok([403, 404].includes(viaToken.status), "the first account's token does not reach the second account");

    const r = await callGateway(chatUrl("shared-id", other), { headers: { "gw-aig-authorization": `Bearer ${otherRun}` }, body: chatBody() });
    assert.equal(r.status, 200);
    assert.equal(lastCredential(), undefined, "the other account's request does not use the first account's key");
    const cross = await callGateway(chatUrl("shared-id"), { headers: { "gw-aig-authorization": `Bearer ${otherRun}` }, body: chatBody() });
    assert.equal(cross.status, 401, "its token does not open the first account's gateway");
    assert.equal((await p.api("GET", `${keysUrl("shared-id")}/${k.id}`)).status, 200, "the key is still there");
  });

  it("reading or changing keys takes AI Gateway Edit", async () => {
    const readOnly = await createToken(p, ["ai_gateway_read"], "read-only");
    const headers = { authorization: `Bearer ${readOnly.value}` };
    assert.equal((await p.api("GET", keysUrl("api"), undefined, headers)).status, 403);
    assert.equal((await p.api("POST", keysUrl("api"), { provider_slug: "openai", alias: "ro", secret: "sk-ro" }, headers)).status, 403);
    assert.equal((await p.api("GET", keysUrl("api"), undefined, { authorization: `Bearer ${run.value}` })).status, 403, "a gateway token cannot read them");
  });

  it("edgecli ai-gateway key: add reads the key from stdin, list and delete never show it", async () => {
    await createGateway(p, "cli");
    const value = secret("cli");
    const add = await p.cli(["ai-gateway", "key", "add", "cli", "anthropic", "--alias", "team", "--default", "--json"], { input: `${value}\n` });
    assert.equal(add.code, 0, add.stderr);
    const k = JSON.parse(add.stdout) as { id: string; provider_slug: string; alias: string; default_config: boolean };
    assert.deepEqual([k.provider_slug, k.alias, k.default_config], ["anthropic", "team", true]);
    const list = await p.cli(["ai-gateway", "key", "list", "cli"]);
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, new RegExp(`${k.id}\\s+anthropic\\s+team\\s+\\(default\\)`));
    const bad = await p.cli(["ai-gateway", "key", "add", "cli", "nope"], { input: "sk-x\n" });
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /unknown provider "nope"/);
    const help = await p.cli(["ai-gateway", "key", "add", "--help"]);
    assert.match(help.stdout, /hidden prompt or stdin/);

    // Anthropic's key goes in x-api-key, as its own clients send it.
    const r = await callGateway(`${p.url}/v1/${p.accountId}/cli/anthropic/v1/chat/completions`, {
      headers: { "gw-aig-token": `Bearer ${run.value}` },
      body: chatBody(),
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(mock.requests.at(-1)!.headers["x-api-key"], value);

    const del = await p.cli(["ai-gateway", "key", "delete", "cli", k.id]);
    assert.equal(del.code, 0, del.stderr);
    for (const out of [add, list, del]) noSecretIn("the CLI's output", out.stdout + out.stderr);
  });

  it("no stored key shows in the platform's output, the request logs, or the database files in clear", async () => {
    const logs = await p.api("GET", `/accounts/${p.accountId}/ai-gateway/gateways/byok/logs`);
    assert.ok(logs.body.result.length >= 3);
    noSecretIn("the logs API", JSON.stringify(logs.body));
    noSecretIn("the platform's output", p.output());
    const dbDir = join(p.stateDir, "db");
    const files = readdirSync(dbDir).filter((f) => f.startsWith("ai-gateway"));
    assert.ok(files.length > 0);
    for (const f of files) noSecretIn(`the database file ${f}`, readFileSync(join(dbDir, f)).toString("latin1"));
  });
});
