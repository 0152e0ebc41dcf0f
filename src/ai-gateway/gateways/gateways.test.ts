import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { TestPlatform } from "../../core/testing/platform.js";
import { openDatabase } from "../../core/db/sqlite.js";
import { AI_GATEWAY_MIGRATIONS } from "../sqlite-migrations.js";
import { callGateway, chatBody, createGateway, createToken, startGatewayPlatform } from "../testing/helpers.js";
import { startMockProvider } from "../testing/mock-provider.js";

const required = { cache_ttl: 0, cache_invalidate_on_update: false, collect_logs: true, rate_limiting_interval: 0, rate_limiting_limit: 0 };

describe("AI gateway settings API and CLI", () => {
  let p: TestPlatform;
  const base = () => `/accounts/${p.accountId}/ai-gateway/gateways`;

  before(async () => {
    p = await startGatewayPlatform([]);
  });
  after(async () => {
    await p?.dispose();
  });

  it("creates, reads, lists, replaces and deletes gateways", async () => {
    const created = await p.api("POST", base(), {
      id: "alpha",
      ...required,
      rate_limiting_technique: "sliding",
      retry_max_attempts: 3,
      retry_delay: 500,
      retry_backoff: "linear",
      log_management: 10000,
      log_management_strategy: "DELETE_OLDEST",
      zdr: false,
    });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const g = created.body.result;
    assert.equal(g.id, "alpha");
    assert.equal(g.rate_limiting_technique, "sliding");
    assert.equal(g.authentication, false);
    assert.equal(g.retry_backoff, "linear");
    assert.equal(g.zdr, false, "a hosted field that is off is kept");
    assert.ok(g.created_at && g.modified_at);
    for (const id of ["beta", "gamma-1", "alpha_2"]) assert.equal((await p.api("POST", base(), { id, ...required })).status, 200);

    const search = await p.api("GET", `${base()}?search=alpha`);
    assert.deepEqual(search.body.result.map((x: { id: string }) => x.id).sort(), ["alpha", "alpha_2"]);
    const page = await p.api("GET", `${base()}?per_page=2&page=2`);
    assert.equal(page.body.result.length, 2);
    assert.equal(page.body.result_info.total_count, 4);

    const put = await p.api("PUT", `${base()}/alpha`, { ...required, cache_ttl: null, authentication: true });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    assert.equal(put.body.result.authentication, true);
    assert.equal(put.body.result.cache_ttl, 0, "null is stored as 0");
    assert.equal(put.body.result.retry_max_attempts, null, "PUT replaces the whole object");
    assert.equal(put.body.result.created_at, g.created_at);

    const del = await p.api("DELETE", `${base()}/beta`);
    assert.equal(del.status, 200);
    assert.equal(del.body.result.id, "beta");
    const gone = await p.api("GET", `${base()}/beta`);
    assert.equal(gone.status, 404);
    assert.equal(gone.body.errors[0].code, 7002);
  });

  it("rejects bad input with 7001 naming the field, and unknown gateways with 7002", async () => {
    const cases: [unknown, RegExp][] = [
      [{ id: "Bad ID", ...required }, /^id:/],
      [{ id: "x".repeat(65), ...required }, /^id:/],
      [{ id: "a--b", ...required }, /^id:/],
      [{ id: "ok", ...required, cache_ttl: -1 }, /^cache_ttl:/],
      [{ id: "ok", cache_ttl: 0 }, /^cache_invalidate_on_update:/],
      [{ id: "ok", ...required, rate_limiting_technique: "leaky" }, /^rate_limiting_technique:/],
      [{ id: "ok", ...required, log_management: 5 }, /^log_management:/],
      [{ id: "ok", ...required, retry_max_attempts: 6 }, /^retry_max_attempts:/],
    ];
    for (const [body, msg] of cases) {
      const r = await p.api("POST", base(), body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.equal(r.body.errors[0].code, 7001);
      assert.match(r.body.errors[0].message, msg);
    }
    assert.equal((await p.api("GET", `${base()}/ok`)).status, 404, "nothing was written");
    await p.api("POST", base(), { id: "dup", ...required });
    assert.equal((await p.api("POST", base(), { id: "dup", ...required })).status, 409);
    const put = await p.api("PUT", `${base()}/missing`, required);
    assert.equal(put.status, 404);
    assert.equal(put.body.errors[0].code, 7002);
    assert.equal((await p.api("PUT", `${base()}/dup`, { ...required, id: "other" })).status, 400);
  });

  // What the hosted gateway can do and this one cannot: each field turned on, and the same field off.
  const unsupportedOnOff: [string, unknown, unknown][] = [
    ["logpush", true, false],
    ["zdr", true, false],
    ["log_classification", true, false],
    ["store_id", "store-1", null],
    ["workers_ai_billing_mode", "unified", "postpaid"],
    ["otel", [{ url: "https://collector.example/v1/traces", headers: {} }], []],
    ["dlp", { enabled: true, action: "BLOCK", profiles: ["p"] }, { enabled: false, action: "BLOCK", profiles: ["p"] }],
    ["dlp", { enabled: true, policies: [] }, null],
    ["guardrails", { prompt: { S1: "BLOCK" }, response: {} }, { prompt: {}, response: {} }],
    ["guardrails", { prompt: {}, response: { P1: "FLAG" } }, null],
    ["stripe", { authorization: "sk_x", usage_events: [{ payload: "{}" }] }, null],
    ["spend_limits", { enabled: true, rules: [{ limit: 5, limitType: "cost", window: 3600 }] }, { enabled: false, rules: [] }],
  ];

  it("refuses a hosted feature it does not have when turned on (7001 naming the field), and keeps it when off", async () => {
    for (const [i, [field, on, off]] of unsupportedOnOff.entries()) {
      const id = `feature-${i}`;
      const refused = await p.api("POST", base(), { id, ...required, [field]: on });
      assert.equal(refused.status, 400, `${field}: ${JSON.stringify(on)}`);
      assert.equal(refused.body.success, false);
      assert.equal(refused.body.errors[0].code, 7001);
      assert.match(refused.body.errors[0].message, new RegExp(`^${field}: .* is not supported here; only .* is accepted`));
      assert.equal(refused.body.errors[0].source?.pointer, `/${field}`);
      assert.equal((await p.api("GET", `${base()}/${id}`)).status, 404, "nothing was written");

      const accepted = await p.api("POST", base(), { id, ...required, [field]: off });
      assert.equal(accepted.status, 200, `${field}: ${JSON.stringify(off)} ${JSON.stringify(accepted.body)}`);
      assert.deepEqual(accepted.body.result[field], off);
      const turnedOn = await p.api("PUT", `${base()}/${id}`, { ...required, [field]: on });
      assert.equal(turnedOn.status, 400, `PUT ${field}: ${JSON.stringify(on)}`);
      assert.deepEqual((await p.api("GET", `${base()}/${id}`)).body.result[field], off, "a refused PUT changes nothing");
    }
    // byok_only holds here either way: every request uses the caller's own provider key and nothing bills for it.
    const byok = await p.api("POST", base(), { id: "byok", ...required, byok_only: true, logpush_public_key: "-----BEGIN PUBLIC KEY-----" });
    assert.equal(byok.status, 200, JSON.stringify(byok.body));
    assert.equal(byok.body.result.byok_only, true);
  });

  it("checks the AI Gateway permissions of the caller", async () => {
    const reader = await createToken(p, ["ai_gateway_read"], "reader");
    const as = (method: string, path: string, body?: unknown) =>
      callGateway(`${p.apiUrl}${path}`, { method, headers: { authorization: `Bearer ${reader.value}` }, body });
    assert.equal((await as("GET", base())).status, 200);
    assert.equal((await as("POST", base(), { id: "nope", ...required })).status, 403);
    const run = await createToken(p, ["ai_gateway_run"], "runner");
    assert.equal(
      (await callGateway(`${p.apiUrl}${base()}`, { method: "GET", headers: { authorization: `Bearer ${run.value}` } })).status,
      403,
      "a gateway token cannot read settings",
    );
  });

  it("manages gateways and gateway tokens with edgecli", async () => {
    const c = await p.cli(["ai-gateway", "create", "cli-gw", "--cache-ttl", "60", "--rate-limit", "10", "--rate-limit-interval", "60", "--json"]);
    assert.equal(c.code, 0, c.stderr);
    assert.equal(JSON.parse(c.stdout).cache_ttl, 60);
    const list = await p.cli(["ai-gateway", "list"]);
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /cli-gw\s+off\s+on\s+60\s+10\/60s/);
    const upd = await p.cli(["ai-gateway", "update", "cli-gw", "--no-collect-logs", "--authentication"]);
    assert.equal(upd.code, 0, upd.stderr);
    const got = JSON.parse((await p.cli(["ai-gateway", "get", "cli-gw"])).stdout);
    assert.equal(got.collect_logs, false);
    assert.equal(got.authentication, true);
    assert.equal(got.cache_ttl, 60, "settings not given stay");

    const tok = await p.cli(["ai-gateway", "token", "create", "cli-gw", "--json"]);
    assert.equal(tok.code, 0, tok.stderr);
    const { id, value } = JSON.parse(tok.stdout) as { id: string; value: string };
    assert.ok(id && value);
    const listed = JSON.parse((await p.cli(["ai-gateway", "token", "list", "--json"])).stdout) as { id: string; value?: string }[];
    assert.ok(listed.some((t) => t.id === id));
    const bootstrapTokenId = (await p.api("GET", "/user/tokens/verify")).body.result.id;
    assert.ok(!listed.some((t) => t.id === bootstrapTokenId), "the all-permission bootstrap token is not a gateway token");
    assert.ok(
      listed.every((t) => t.value === undefined),
      "values are never listed",
    );
    const rev = await p.cli(["ai-gateway", "token", "revoke", id]);
    assert.equal(rev.code, 0, rev.stderr);
    assert.ok(!(JSON.parse((await p.cli(["ai-gateway", "token", "list", "--json"])).stdout) as { id: string }[]).some((t) => t.id === id));

    const noLogs = await p.cli(["ai-gateway", "logs", "cli-gw"]);
    assert.equal(noLogs.code, 0, noLogs.stderr);
    assert.match(noLogs.stderr + noLogs.stdout, /No logs in cli-gw/);
    assert.equal((await p.cli(["ai-gateway", "logs", "cli-gw", "--limit", "99"])).code, 1);
    const missing = await p.cli(["ai-gateway", "token", "create", "no-such-gw"]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /7002/);
    const bad = await p.cli(["ai-gateway", "create", "Bad Id"]);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /id:/);
    const nothing = await p.cli(["ai-gateway", "update", "cli-gw"]);
    assert.equal(nothing.code, 1);
    // No terminal here: a delete without -y is refused and deletes nothing, as every command that deletes a container.
    const refused = await p.cli(["ai-gateway", "delete", "cli-gw"]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /no terminal to ask on: pass --skip-confirmation \(-y\)/);
    assert.equal((await p.cli(["ai-gateway", "get", "cli-gw"])).code, 0, "still there");
    const del = await p.cli(["ai-gateway", "delete", "cli-gw", "-y"]);
    assert.equal(del.code, 0, del.stderr);
    assert.equal((await p.cli(["ai-gateway", "get", "cli-gw"])).code, 1);
  });
});

describe("AI gateway settings stored before the platform refused them", () => {
  it("keeps serving a gateway that holds a turned-on hosted feature, reports it as stored, and any update must turn it off", async () => {
    const mock = await startMockProvider();
    const p = await startGatewayPlatform([`openai=${mock.url}`]);
    let again: TestPlatform | undefined;
    try {
      await createGateway(p, "older");
      await p.stop();
      // What an earlier version wrote when it accepted DLP turned on.
      const db = openDatabase(join(p.stateDir, "db", "ai-gateway.sqlite"), AI_GATEWAY_MIGRATIONS);
      db.prepare(`UPDATE gateways SET settings = json_set(settings, '$.dlp', json(?)) WHERE id = 'older'`).run(
        JSON.stringify({ enabled: true, action: "BLOCK", profiles: ["p"] }),
      );
      db.close();

      again = await startGatewayPlatform([`openai=${mock.url}`], { stateDir: p.stateDir, credentials: p });
      const path = `/accounts/${again.accountId}/ai-gateway/gateways/older`;
      const stored = await again.api("GET", path);
      assert.equal(stored.status, 200);
      assert.equal(stored.body.result.dlp.enabled, true, "reported as stored");
      const call = await callGateway(`${again.url}/v1/${again.accountId}/older/openai/chat/completions`, {
        headers: { authorization: "Bearer k" },
        body: chatBody(),
      });
      assert.equal(call.status, 200, "the gateway keeps serving");

      const roundTrip = await again.api("PUT", path, { ...stored.body.result, cache_ttl: 60 });
      assert.equal(roundTrip.status, 400, "an update that keeps DLP on is refused");
      assert.match(roundTrip.body.errors[0].message, /^dlp: /);
      const { dlp: _dlp, ...withoutDlp } = stored.body.result;
      const turnedOff = await again.api("PUT", path, { ...withoutDlp, cache_ttl: 60 });
      assert.equal(turnedOff.status, 200, JSON.stringify(turnedOff.body));
      assert.equal(turnedOff.body.result.dlp, undefined);
    } finally {
      await again?.dispose();
      await p.dispose();
      await mock.close();
    }
  });
});
