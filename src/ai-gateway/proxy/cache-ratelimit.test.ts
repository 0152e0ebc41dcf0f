import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { TestPlatform } from "../../core/testing/platform.js";
import { callGateway, chatBody, createGateway, updateGateway, startGatewayPlatform } from "../testing/helpers.js";
import { startMockProvider, type MockProvider } from "../testing/mock-provider.js";

describe("AI gateway cache and rate limit", () => {
  let mock: MockProvider;
  let p: TestPlatform;
  const chat = (gw: string, headers: Record<string, string> = {}, body: unknown = chatBody()) =>
    callGateway(`${p.url}/v1/${p.accountId}/${gw}/openai/chat/completions`, { headers: { authorization: "Bearer sk-a", ...headers }, body });

  before(async () => {
    mock = await startMockProvider();
    p = await startGatewayPlatform([`openai=${mock.url}`]);
  });
  after(async () => {
    await p?.dispose();
    await mock?.close();
  });

  it("answers identical requests from the cache (HIT/MISS), keyed on body and credential, and logs hits as cached", async () => {
    await createGateway(p, "cached", { cache_ttl: 60, cache_invalidate_on_update: true });
    const before = mock.requests.length;
    const first = await chat("cached", {}, chatBody("same"));
    assert.equal(first.headers["gw-aig-cache-status"], "MISS");
    const second = await chat("cached", {}, chatBody("same"));
    assert.equal(second.headers["gw-aig-cache-status"], "HIT");
    assert.equal(second.text, first.text);
    assert.equal(mock.requests.length - before, 1, "the hit did not reach the provider");

    assert.equal((await chat("cached", {}, chatBody("other"))).headers["gw-aig-cache-status"], "MISS");
    assert.equal(
      (await chat("cached", { authorization: "Bearer sk-b" }, chatBody("same"))).headers["gw-aig-cache-status"],
      "MISS",
      "another credential never sees this one's answers",
    );
    const skipped = await chat("cached", { "gw-aig-skip-cache": "true" }, chatBody("same"));
    assert.equal(skipped.headers["gw-aig-cache-status"], undefined);
    assert.equal(mock.requests.length - before, 4);

    const logs = await p.api("GET", `/accounts/${p.accountId}/ai-gateway/gateways/cached/logs?cached=true`);
    assert.equal(logs.body.result.length, 1);
    assert.equal(logs.body.result[0].cost, 0);
    assert.equal(logs.body.result[0].tokens_in, 0);

    // cache_invalidate_on_update: an update empties the gateway's cache.
    await updateGateway(p, "cached", { collect_logs: true });
    assert.equal((await chat("cached", {}, chatBody("same"))).headers["gw-aig-cache-status"], "MISS");
  });

  it("caches per request with gw-aig-cache-ttl and gw-aig-cache-key on a gateway without caching", async () => {
    await createGateway(p, "percall");
    assert.equal((await chat("percall", {}, chatBody("x"))).headers["gw-aig-cache-status"], undefined);
    assert.equal((await chat("percall", { "gw-aig-cache-ttl": "120" }, chatBody("x"))).headers["gw-aig-cache-status"], "MISS");
    assert.equal((await chat("percall", { "gw-aig-cache-ttl": "120" }, chatBody("x"))).headers["gw-aig-cache-status"], "HIT");
    assert.equal((await chat("percall", { "gw-aig-cache-key": "k1" }, chatBody("a"))).headers["gw-aig-cache-status"], "MISS");
    const byKey = await chat("percall", { "gw-aig-cache-key": "k1" }, chatBody("b"));
    assert.equal(byKey.headers["gw-aig-cache-status"], "HIT");
    assert.equal(byKey.json.choices[0].message.content, "echo: a", "a custom key replaces the computed one");
  });

  it("caches a streamed answer and replays it", async () => {
    await createGateway(p, "sse-cache", { cache_ttl: 60 });
    const a = await chat("sse-cache", {}, chatBody("s", { stream: true }));
    const b = await chat("sse-cache", {}, chatBody("s", { stream: true }));
    assert.equal(b.headers["gw-aig-cache-status"], "HIT");
    assert.equal(b.headers["content-type"], "text/event-stream");
    assert.equal(b.text, a.text);
  });

  it("refuses requests over the gateway's rate limit with 429 and code 2003 (fixed and sliding)", async () => {
    for (const technique of ["fixed", "sliding"]) {
      const id = `limited-${technique}`;
      await createGateway(p, id, { rate_limiting_limit: 3, rate_limiting_interval: 3600, rate_limiting_technique: technique });
      const statuses: number[] = [];
      let last;
      for (let i = 0; i < 5; i++) {
        last = await chat(id);
        statuses.push(last.status);
      }
      assert.deepEqual(statuses, [200, 200, 200, 429, 429], technique);
      assert.equal(last!.json.errors[0].code, 2003);
      assert.equal(last!.json.errors[0].message, "Rate limited");
      const logs = await p.api("GET", `/accounts/${p.accountId}/ai-gateway/gateways/${id}/logs`);
      assert.equal(logs.body.result_info.total_count, 3, "refused requests are not forwarded nor logged");
    }
    // Raising the limit takes effect at once.
    await updateGateway(p, "limited-fixed", { rate_limiting_limit: 10 });
    assert.equal((await chat("limited-fixed")).status, 200);
  });
});
