import assert from "node:assert/strict";
import { test } from "node:test";
import OpenAI from "openai";
import { assertPromtoolAccepts, freeMetricsPort, sample, scrape, scrapeUntil } from "../core/testing/metrics.js";
import { MODELS_PER_PROVIDER } from "./metrics.js";
import { callGateway, chatBody, createGateway, startGatewayPlatform } from "./testing/helpers.js";
import { startMockProvider } from "./testing/mock-provider.js";

/** What the stand-in provider bills each answer: 11 prompt and 7 completion tokens, priced as gpt-4o-mini (prices.json). */
const TOKENS_IN = 11;
const TOKENS_OUT = 7;
const COST = (TOKENS_IN * 0.15 + TOKENS_OUT * 0.6) / 1e6;

test("AI gateway requests, tokens, cost and cache lookups by provider and model in /metrics, models per provider capped", async (t) => {
  const mock = await startMockProvider();
  t.after(() => mock.close());
  const port = await freeMetricsPort();
  // Two catalog providers answered by the one stand-in (both speak OpenAI's chat API).
  const p = await startGatewayPlatform([`openai=${mock.url}`, `groq=${mock.url}`], { args: ["--metrics-port", String(port)] });
  t.after(() => p.dispose());
  const url = `http://127.0.0.1:${port}/metrics`;
  await createGateway(p, "metered");
  await createGateway(p, "cached", { cache_ttl: 60 });

  // The openai SDK, as a tenant's application uses the gateway: two chats and a stream with usage.
  const client = new OpenAI({ baseURL: `${p.url}/v1/${p.accountId}/metered/openai`, apiKey: "sk-test", maxRetries: 0 });
  for (const content of ["one", "two"]) await client.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content }] });
  const stream = await client.chat.completions.create({
    model: "gpt-4o-mini",
    messages: [{ role: "user", content: "three" }],
    stream: true,
    stream_options: { include_usage: true },
  });
  for await (const chunk of stream) void chunk;
  // A provider's failure: an error, without tokens or cost.
  mock.failNext(1, 500);
  const failed = await callGateway(`${p.url}/v1/${p.accountId}/metered/openai/chat/completions`, {
    headers: { authorization: "Bearer sk-test" },
    body: chatBody(),
  });
  assert.equal(failed.status, 500);
  // The cache: a miss (answered and billed by the provider), then a hit (neither).
  const cached = new OpenAI({ baseURL: `${p.url}/v1/${p.accountId}/cached/openai`, apiKey: "sk-test", maxRetries: 0 });
  for (let i = 0; i < 2; i++) await cached.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "same" }] });

  // More distinct models than a provider gets labels for: the first MODELS_PER_PROVIDER by name, then "(other)".
  const groq = `${p.url}/v1/${p.accountId}/metered/groq/chat/completions`;
  for (let i = 0; i < MODELS_PER_PROVIDER + 2; i++) {
    const r = await callGateway(groq, { headers: { authorization: "Bearer gsk-test" }, body: chatBody("m", { model: `model-${i}` }) });
    assert.equal(r.status, 200, r.text);
  }

  const openai = 'provider="openai",model="gpt-4o-mini"';
  const text = await scrapeUntil(
    url,
    "the last request counted",
    (s) => sample(s, "edgeplatform_ai_gateway_requests_total", 'provider="groq",model="(other)",outcome="ok"') === 2,
  );
  const s = (name: string, labels: string) => sample(text, `edgeplatform_ai_gateway_${name}`, labels);
  assert.equal(s("requests_total", `${openai},outcome="ok"`), 5, "three through the SDK, the miss and the hit");
  assert.equal(s("requests_total", `${openai},outcome="error"`), 1);
  assert.equal(s("tokens_total", `${openai},direction="input"`), 4 * TOKENS_IN, "the provider's four answers; not the hit's");
  assert.equal(s("tokens_total", `${openai},direction="output"`), 4 * TOKENS_OUT);
  assert.ok(Math.abs(s("cost_dollars_total", openai)! - 4 * COST) < 1e-12, text);
  assert.equal(s("cache_lookups_total", `${openai},result="hit"`), 1);
  assert.equal(s("cache_lookups_total", `${openai},result="miss"`), 1);

  for (let i = 0; i < MODELS_PER_PROVIDER; i++) assert.equal(s("requests_total", `provider="groq",model="model-${i}",outcome="ok"`), 1);
  assert.equal(s("requests_total", `provider="groq",model="model-${MODELS_PER_PROVIDER}",outcome="ok"`), undefined, "no label past the cap");
  assert.equal(s("tokens_total", 'provider="groq",model="(other)",direction="input"'), 2 * TOKENS_IN);
  const groqSeries = text.split("\n").filter((l) => l.startsWith('edgeplatform_ai_gateway_requests_total{provider="groq"'));
  assert.equal(groqSeries.length, MODELS_PER_PROVIDER + 1, groqSeries.join("\n"));

  await assertPromtoolAccepts(t, await scrape(url));
});
