import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import OpenAI from "openai";
import type { TestPlatform } from "../../core/testing/platform.js";
import { callGateway, chatBody, createGateway, startGatewayPlatform } from "../testing/helpers.js";
import { startMockProvider, type MockProvider } from "../testing/mock-provider.js";

describe("AI gateway universal and compat endpoints", () => {
  let primary: MockProvider;
  let backup: MockProvider;
  let deadUrl: string;
  let p: TestPlatform;

  before(async () => {
    primary = await startMockProvider();
    backup = await startMockProvider();
    const dead = await startMockProvider();
    deadUrl = dead.url;
    await dead.close();
    p = await startGatewayPlatform([`openai=${primary.url}`, `groq=${backup.url}`, `mistral=${deadUrl}`]);
    await createGateway(p, "uni");
  });
  after(async () => {
    await p?.dispose();
    await primary?.close();
    await backup?.close();
  });

  const universal = (steps: unknown) => callGateway(`${p.url}/v1/${p.accountId}/uni`, { body: steps });
  const step = (provider: string, endpoint: string, key: string, content = "u") => ({
    provider,
    endpoint,
    headers: { Authorization: `Bearer ${key}` },
    query: chatBody(content),
  });

  it("falls back to the next step when a provider fails or cannot be reached, and says which step answered", async () => {
    primary.failNext(1, 500);
    const r = await universal([
      step("openai", "chat/completions", "sk-primary"),
      step("mistral", "v1/chat/completions", "sk-dead"),
      step("groq", "chat/completions", "sk-backup", "fb"),
    ]);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers["gw-aig-step"], "2");
    assert.equal(r.json.choices[0].message.content, "echo: fb");
    assert.equal(backup.requests.at(-1)!.headers.authorization, "Bearer sk-backup");

    const ok = await universal([step("openai", "chat/completions", "sk-primary", "first")]);
    assert.equal(ok.headers["gw-aig-step"], "0");
    const logs = await p.api("GET", `/accounts/${p.accountId}/ai-gateway/gateways/uni/logs?order_by_direction=asc`);
    const steps = logs.body.result.map((l: { step: number; provider: string }) => [l.step, l.provider]);
    assert.deepEqual(steps, [
      [2, "groq"],
      [0, "openai"],
    ]);
  });

  it("passes the last step's failure through, and 502 when no step can be reached", async () => {
    primary.failNext(1, 503);
    const r = await universal([step("mistral", "v1/chat/completions", "k"), step("openai", "chat/completions", "k")]);
    assert.equal(r.status, 503);
    assert.equal(r.headers["gw-aig-step"], "1");
    const dead = await universal([step("mistral", "v1/chat/completions", "k")]);
    assert.equal(dead.status, 502);
    const bad = await universal([{ provider: "nope", endpoint: "x", query: {} }]);
    assert.equal(bad.status, 400);
    const notJson = await callGateway(`${p.url}/v1/${p.accountId}/uni`, { body: "{oops" });
    assert.equal(notJson.status, 400);
  });

  it("refuses a step header that HTTP cannot carry with a 400 naming it, before contacting any provider", async () => {
    const seen = primary.requests.length;
    const withHeaders = (headers: Record<string, string>) => ({ ...step("openai", "chat/completions", "k"), headers });
    for (const [headers, named, what] of [
      [{ "[[[[": "x" }, "[[[[", "name"],
      [{ "x a": "x" }, "x a", "name"],
      [{ "": "x" }, "", "name"],
      [{ "x-note": "a\r\nx-injected: 1" }, "x-note", "value"],
      [{ "x-note": "a\nb" }, "x-note", "value"],
      [{ "x-note": "a\u0000b" }, "x-note", "value"],
      [{ "x-note": "price: 5€" }, "x-note", "value"],
    ] as const) {
      // The bad header is on the second step: the first step must not be tried either.
      const r = await universal([step("openai", "chat/completions", "k"), withHeaders(headers)]);
      assert.equal(r.status, 400, `${JSON.stringify(headers)}: ${r.text}`);
      assert.equal(r.json.success, false);
      assert.equal(r.json.errors[0].code, 7001);
      assert.ok(r.json.errors[0].message.startsWith(`headers: ${JSON.stringify(named)}`), r.json.errors[0].message);
      assert.match(r.json.errors[0].message, new RegExp(`header ${what}`));
    }
    assert.equal(primary.requests.length, seen, "no provider was contacted");
  });

  it("drops hop-by-hop and gateway headers a step names, as it does the client's own", async () => {
    const headers = {
      Authorization: "Bearer sk-hop",
      Host: "elsewhere.example",
      Connection: "upgrade",
      "Transfer-Encoding": "chunked",
      "Keep-Alive": "timeout=5",
      Upgrade: "websocket",
      Expect: "100-continue",
      "cf-aig-cache-key": "k",
      "x-kept": "yes",
    };
    const r = await universal([{ ...step("openai", "chat/completions", "k", "hop"), headers }]);
    assert.equal(r.status, 200, r.text);
    const seen = primary.requests.at(-1)!.headers;
    assert.equal(seen.authorization, "Bearer sk-hop");
    assert.equal(seen["x-kept"], "yes");
    assert.notEqual(seen.host, "elsewhere.example");
    for (const name of ["upgrade", "transfer-encoding", "keep-alive", "expect", "cf-aig-cache-key"]) assert.equal(seen[name], undefined, name);
  });

  it("serves the OpenAI-compatible compat endpoint with provider/model names, also through the OpenAI SDK", async () => {
    const client = new OpenAI({ baseURL: `${p.url}/v1/${p.accountId}/uni/compat`, apiKey: "sk-groq", maxRetries: 0 });
    const chat = await client.chat.completions.create({ model: "groq/llama-3.1-8b-instant", messages: [{ role: "user", content: "hi" }] });
    assert.equal(chat.choices[0].message.content, "echo: hi");
    const seen = backup.requests.at(-1)!;
    assert.equal(JSON.parse(seen.body).model, "llama-3.1-8b-instant");
    assert.equal(seen.headers.authorization, "Bearer sk-groq");
    const bad = await callGateway(`${p.url}/v1/${p.accountId}/uni/compat/chat/completions`, { body: chatBody("x", { model: "gpt-4o" }) });
    assert.equal(bad.status, 400);
    assert.match(bad.json.errors[0].message, /<provider>\/<model>/);
  });

  it("refuses provider path segments that cannot be in the upstream URL with a 400, on the provider path and the universal endpoint (issue 30, hole 8)", async () => {
    // Before: `new URL()` threw on the Azure resource (it becomes a hostname) and the answer was a 500.
    for (const resource of ["%25", "a%20b", "a%23b", "a@b", "a%2Fb", "a%00b", "-a", "x".repeat(64)]) {
      const r = await callGateway(`${p.url}/v1/${p.accountId}/uni/azure-openai/${resource}/dep/chat/completions?api-version=2024-10-21`, {
        body: chatBody(),
      });
      assert.equal(r.status, 400, `${resource}: ${r.text}`);
      assert.equal(r.json.success, false);
      assert.match(r.json.errors[0].message, /azure-openai resource must be a DNS label/, resource);
    }
    const deployment = await callGateway(`${p.url}/v1/${p.accountId}/uni/azure-openai/res/a%20b/chat/completions`, { body: chatBody() });
    assert.equal(deployment.status, 400, deployment.text);
    for (const endpoint of [
      "a b/dep/chat/completions",
      "a#b/dep/chat/completions",
      "a\u0000b/dep/chat/completions",
      "res/dep/chat completions",
      "res/dep/x#y",
    ]) {
      const r = await universal([step("azure-openai", endpoint, "k")]);
      assert.equal(r.status, 400, `${JSON.stringify(endpoint)}: ${r.text}`);
      assert.equal(r.json.success, false);
    }
    for (const endpoint of ["chat/completions\u0001", "chat completions", "chat\\completions"]) {
      const r = await universal([step("openai", endpoint, "k")]);
      assert.equal(r.status, 400, `${JSON.stringify(endpoint)}: ${r.text}`);
    }
  });
});
