import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import Cloudflare from "cloudflare";
import type { TestPlatform } from "../core/testing/platform.js";
import { callGateway, chatBody, startGatewayPlatform } from "./testing/helpers.js";
import { startMockProvider, type MockProvider } from "./testing/mock-provider.js";

/** The official Cloudflare TypeScript SDK (a real client of the hosted API) against our gateway settings and logs API. */
describe("AI gateway API with the cloudflare SDK", () => {
  let mock: MockProvider;
  let p: TestPlatform;
  let cf: Cloudflare;

  before(async () => {
    mock = await startMockProvider();
    p = await startGatewayPlatform([`openai=${mock.url}`]);
    cf = new Cloudflare({ apiToken: p.token, baseURL: p.apiUrl, maxRetries: 0 });
  });
  after(async () => {
    await p?.dispose();
    await mock?.close();
  });

  it("creates, lists, gets, updates and deletes gateways", async () => {
    const account_id = p.accountId;
    const created = await cf.aiGateway.create({
      account_id,
      id: "sdk-gw",
      cache_invalidate_on_update: true,
      cache_ttl: 0,
      collect_logs: true,
      rate_limiting_interval: 0,
      rate_limiting_limit: 0,
      rate_limiting_technique: "fixed",
    });
    assert.equal(created.id, "sdk-gw");
    const ids: string[] = [];
    for await (const g of cf.aiGateway.list({ account_id })) ids.push(g.id);
    assert.ok(ids.includes("sdk-gw"));
    const updated = await cf.aiGateway.update("sdk-gw", {
      account_id,
      cache_invalidate_on_update: false,
      cache_ttl: 120,
      collect_logs: true,
      rate_limiting_interval: 60,
      rate_limiting_limit: 5,
      authentication: true,
    });
    assert.equal(updated.cache_ttl, 120);
    assert.equal(updated.authentication, true);
    assert.equal((await cf.aiGateway.get("sdk-gw", { account_id })).rate_limiting_limit, 5);
    await assert.rejects(cf.aiGateway.get("missing", { account_id }), (e: unknown) => e instanceof Cloudflare.NotFoundError);
    await assert.rejects(
      cf.aiGateway.create({
        account_id,
        id: "Bad Id",
        cache_invalidate_on_update: true,
        cache_ttl: 0,
        collect_logs: true,
        rate_limiting_interval: 0,
        rate_limiting_limit: 0,
      }),
      (e: unknown) => e instanceof Cloudflare.BadRequestError && /7001/.test(String(e)),
    );
    assert.equal((await cf.aiGateway.delete("sdk-gw", { account_id })).id, "sdk-gw");
  });

  it("refuses a hosted feature turned on (DLP, guardrails, Logpush) and accepts it off, on create and update", async () => {
    const account_id = p.accountId;
    const base = { account_id, cache_invalidate_on_update: false, cache_ttl: 0, collect_logs: true, rate_limiting_interval: 0, rate_limiting_limit: 0 };
    const refused = (field: string) => (e: unknown) =>
      e instanceof Cloudflare.BadRequestError && /7001/.test(String(e)) && new RegExp(`${field}: .*not supported here`).test(String(e));
    await assert.rejects(cf.aiGateway.create({ ...base, id: "sdk-dlp", dlp: { enabled: true, action: "BLOCK", profiles: ["pii"] } }), refused("dlp"));
    await assert.rejects(cf.aiGateway.get("sdk-dlp", { account_id }), (e: unknown) => e instanceof Cloudflare.NotFoundError);

    const off = await cf.aiGateway.create({
      ...base,
      id: "sdk-dlp",
      dlp: { enabled: false, action: "BLOCK", profiles: ["pii"] },
      logpush: false,
      zdr: false,
      workers_ai_billing_mode: "postpaid",
      guardrails: null,
    });
    assert.equal(off.dlp?.enabled, false);
    assert.equal(off.logpush, false);
    await assert.rejects(cf.aiGateway.update("sdk-dlp", { ...base, guardrails: { prompt: { S1: "BLOCK" }, response: {} } }), refused("guardrails"));
    await assert.rejects(cf.aiGateway.update("sdk-dlp", { ...base, logpush: true }), refused("logpush"));
    const updated = await cf.aiGateway.update("sdk-dlp", { ...base, cache_ttl: 30, guardrails: { prompt: {}, response: {} }, byok_only: true });
    assert.equal(updated.cache_ttl, 30);
    assert.equal(updated.byok_only, true);
    await cf.aiGateway.delete("sdk-dlp", { account_id });
  });

  it("lists, filters, reads, edits and deletes logs", async () => {
    const account_id = p.accountId;
    await cf.aiGateway.create({
      account_id,
      id: "sdk-logs",
      cache_invalidate_on_update: true,
      cache_ttl: 0,
      collect_logs: true,
      rate_limiting_interval: 0,
      rate_limiting_limit: 0,
    });
    const url = `${p.url}/v1/${account_id}/sdk-logs/openai/chat/completions`;
    await callGateway(url, { headers: { authorization: "Bearer k" }, body: chatBody("one") });
    mock.failNext(1, 500);
    await callGateway(url, { headers: { authorization: "Bearer k" }, body: chatBody("two") });

    const all = [];
    for await (const l of cf.aiGateway.logs.list("sdk-logs", { account_id })) all.push(l);
    assert.equal(all.length, 2);
    const failed = [];
    for await (const l of cf.aiGateway.logs.list("sdk-logs", { account_id, filters: [{ key: "success", operator: "eq", value: [false] }] })) failed.push(l);
    assert.equal(failed.length, 1);
    assert.equal(failed[0].success, false);

    const ok = all.find((l) => l.success)!;
    const one = await cf.aiGateway.logs.get(ok.id, { account_id, gateway_id: "sdk-logs" });
    assert.equal(one.tokens_in, 11);
    await cf.aiGateway.logs.edit(ok.id, { account_id, gateway_id: "sdk-logs", feedback: 1 });
    const edited = (await cf.aiGateway.logs.get(ok.id, { account_id, gateway_id: "sdk-logs" })) as { feedback?: number };
    assert.equal(edited.feedback, 1);
    const req = (await cf.aiGateway.logs.request(ok.id, { account_id, gateway_id: "sdk-logs" })) as { messages: { content: string }[] };
    assert.equal(req.messages[0].content, "one");

    await cf.aiGateway.logs.delete("sdk-logs", { account_id, filters: [{ key: "success", operator: "eq", value: [false] }] });
    const left = [];
    for await (const l of cf.aiGateway.logs.list("sdk-logs", { account_id })) left.push(l);
    assert.deepEqual(
      left.map((l) => l.id),
      [ok.id],
    );
  });
});
