import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import OpenAI from "openai";
import type { TestPlatform } from "../../core/testing/platform.js";
import { callGateway, chatBody, createGateway, createToken, updateGateway, startGatewayPlatform } from "../testing/helpers.js";
import { startMockProvider, type MockProvider } from "../testing/mock-provider.js";

describe("AI gateway proxy", () => {
  let mock: MockProvider;
  let p: TestPlatform;
  let run: { id: string; value: string };
  const chatUrl = (gw: string) => `${p.url}/v1/${p.accountId}/${gw}/openai/chat/completions`;

  before(async () => {
    mock = await startMockProvider();
    p = await startGatewayPlatform([`openai=${mock.url}`]);
    run = await createToken(p, ["ai_gateway_run"]);
  });
  after(async () => {
    await p?.dispose();
    await mock?.close();
  });

  it("the OpenAI SDK configured as the spec says completes a chat and a stream through an authenticated gateway", async () => {
    await createGateway(p, "sdk", { authentication: true });
    const client = new OpenAI({
      baseURL: `${p.url}/v1/${p.accountId}/sdk/openai`,
      apiKey: "sk-provider-key-123",
      defaultHeaders: { "gw-aig-token": `Bearer ${run.value}` },
      maxRetries: 0,
    });
    const chat = await client.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "ping" }] });
    assert.equal(chat.choices[0].message.content, "echo: ping");
    assert.equal(chat.usage?.prompt_tokens, 11);

    const stream = await client.chat.completions.create({
      model: "gpt-4o-mini",
      messages: [{ role: "user", content: "stream me" }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = "";
    let usage: OpenAI.CompletionUsage | undefined | null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? "";
      if (chunk.usage) usage = chunk.usage;
    }
    assert.equal(text, "echo: stream me 1 2");
    assert.equal(usage?.completion_tokens, 7);

    // The provider saw its own key untouched and none of the gateway's headers.
    const seen = mock.requests.at(-1)!;
    assert.equal(seen.headers.authorization, "Bearer sk-provider-key-123");
    assert.equal(seen.url, "/v1/chat/completions");
    assert.ok(!Object.keys(seen.headers).some((h) => h.startsWith("gw-aig-") || h.startsWith("cf-aig-")), JSON.stringify(seen.headers));

    // Both requests were logged, with the usage read from the JSON answer and from the stream.
    const logs = await p.api("GET", `/accounts/${p.accountId}/ai-gateway/gateways/sdk/logs?order_by_direction=asc`);
    assert.equal(logs.body.result.length, 2);
    for (const l of logs.body.result) {
      assert.equal(l.tokens_in, 11);
      assert.equal(l.tokens_out, 7);
      assert.equal(l.authenticated, true);
    }
    assert.equal(logs.body.result[1].response_content_type, "text/event-stream");
  });

  it("passes a stream through chunk by chunk: the first chunk arrives while the provider still holds the rest", async () => {
    await createGateway(p, "chunks");
    const { release } = mock.holdNextStream();
    const { request } = await import("undici");
    const res = await request(chatUrl("chunks"), {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer k" },
      body: JSON.stringify(chatBody("live", { stream: true, stream_options: { include_usage: true } })),
    });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers["content-type"], "text/event-stream");
    const it = (res.body as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
    const first = await it.next(); // would wait forever if the gateway buffered the answer
    assert.match(String(first.value), /echo: live/);
    release();
    let rest = "";
    for (let n = await it.next(); !n.done; n = await it.next()) rest += String(n.value);
    assert.match(rest, /\[DONE\]/);
    const logs = await p.api("GET", `/accounts/${p.accountId}/ai-gateway/gateways/chunks/logs`);
    assert.equal(logs.body.result[0].tokens_out, 7, "usage read from the stream as it passed");
  });

  it("when the client leaves mid-stream, the upstream call is dropped and the log says so", async () => {
    await createGateway(p, "gone");
    const held = mock.holdNextStream();
    const { request } = await import("undici");
    const res = await request(chatUrl("gone"), {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer k" },
      body: JSON.stringify(chatBody("bye", { stream: true })),
    });
    const it = (res.body as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
    assert.match(String((await it.next()).value), /echo: bye/);
    res.body.destroy();
    await held.abandoned; // the gateway dropped its upstream call
    held.release();
    let log: { status_code: number; success: boolean; cost_note: string } | undefined;
    for (let i = 0; i < 50 && !log; i++) {
      await new Promise((r) => setTimeout(r, 50));
      log = (await p.api("GET", `/accounts/${p.accountId}/ai-gateway/gateways/gone/logs`)).body.result[0];
    }
    assert.ok(log, "the aborted exchange is logged");
    assert.equal(log.success, false);
    assert.equal(log.status_code, 499);
    assert.match(log.cost_note, /client went away/);
    // The gateway still serves.
    assert.equal((await callGateway(chatUrl("gone"), { body: chatBody() })).status, 200);
  });

  it("streams a large request body to the provider and logs it whole", async () => {
    await createGateway(p, "big");
    const content = "x".repeat(200_000);
    const r = await callGateway(chatUrl("big"), { headers: { authorization: "Bearer k" }, body: chatBody(content) });
    assert.equal(r.status, 200);
    const seen = mock.requests.at(-1)!;
    assert.equal(JSON.parse(seen.body).messages[0].content.length, 200_000);
    const id = r.headers["gw-aig-log-id"] as string;
    const log = (await p.api("GET", `/accounts/${p.accountId}/ai-gateway/gateways/big/logs/${id}`)).body.result;
    assert.equal(log.request_size, Buffer.byteLength(seen.body));
    const stored = await callGateway(`${p.apiUrl}/accounts/${p.accountId}/ai-gateway/gateways/big/logs/${id}/request`, { method: "GET", headers: p.headers() });
    assert.equal(stored.text, seen.body);
  });

  it("follows the state matrix: on+valid forwarded, on+absent 401 2009, off+present and off+absent forwarded", async () => {
    await createGateway(p, "matrix");
    const auth = { "gw-aig-authorization": `Bearer ${run.value}`, authorization: "Bearer sk-x" };
    // Off + present, off + absent.
    assert.equal((await callGateway(chatUrl("matrix"), { headers: auth, body: chatBody() })).status, 200);
    assert.equal((await callGateway(chatUrl("matrix"), { headers: { authorization: "Bearer sk-x" }, body: chatBody() })).status, 200);
    await updateGateway(p, "matrix", { authentication: true });
    // On + present.
    assert.equal((await callGateway(chatUrl("matrix"), { headers: auth, body: chatBody() })).status, 200);
    // On + absent: refused before forwarding, in the v4 envelope with the hosted extras.
    const before = mock.requests.length;
    const r = await callGateway(chatUrl("matrix"), { headers: { authorization: "Bearer sk-x" }, body: chatBody() });
    assert.equal(r.status, 401);
    assert.equal(r.json.success, false);
    assert.deepEqual(r.json.errors, [{ code: 2009, message: "Unauthorized" }]);
    assert.equal(r.json.internalCode, 2009);
    assert.equal(r.json.name, "AiGatewayError");
    assert.equal(mock.requests.length, before, "a refused request must not reach the provider");
    // The cf- prefix is an alias.
    assert.equal((await callGateway(chatUrl("matrix"), { headers: { "cf-aig-authorization": `Bearer ${run.value}` }, body: chatBody() })).status, 200);
  });

  it("refuses invalid, revoked, permission-less and other-account tokens, and logs none of them", async () => {
    await createGateway(p, "strict", { authentication: true });
    const readOnly = await createToken(p, ["ai_gateway_read"], "read-only");
    const doomed = await createToken(p, ["ai_gateway_run"], "doomed");
    const ok = await callGateway(chatUrl("strict"), { headers: { "gw-aig-token": `Bearer ${doomed.value}` }, body: chatBody() });
    assert.equal(ok.status, 200);
    assert.equal((await p.api("DELETE", `/accounts/${p.accountId}/tokens/${doomed.id}`)).status, 200);

    for (const value of ["not-a-token", readOnly.value, doomed.value]) {
      const r = await callGateway(chatUrl("strict"), { headers: { "gw-aig-authorization": `Bearer ${value}` }, body: chatBody() });
      assert.equal(r.status, 401, value);
      assert.equal(r.json.errors[0].code, 2009);
    }
    // A Run token of this account does not open a gateway of another account (even of the same user).
    // (Creating an account takes the global key, so these calls go without the bootstrap token.)
    const keyAuth = { "x-auth-email": p.email, "x-auth-key": p.apiKey };
    const acc = await callGateway(`${p.apiUrl}/accounts`, { headers: keyAuth, body: { name: "second" } });
    assert.equal(acc.status, 200, acc.text);
    const other = acc.json.result.id as string;
    const gwBody = {
      id: "strict",
      cache_ttl: 0,
      cache_invalidate_on_update: false,
      collect_logs: true,
      rate_limiting_interval: 0,
      rate_limiting_limit: 0,
      authentication: true,
    };
    const gw = await callGateway(`${p.apiUrl}/accounts/${other}/ai-gateway/gateways`, { headers: keyAuth, body: gwBody });
    assert.equal(gw.status, 200, gw.text);
    const cross = await callGateway(`${p.url}/v1/${other}/strict/openai/chat/completions`, {
      headers: { "gw-aig-authorization": `Bearer ${run.value}` },
      body: chatBody(),
    });
    assert.equal(cross.status, 401);
    assert.equal(cross.json.errors[0].code, 2009);

    const logs = await p.api("GET", `/accounts/${p.accountId}/ai-gateway/gateways/strict/logs`);
    assert.equal(logs.body.result.length, 1, "only the accepted request is logged");
  });

  it("enabling in the spec's order never fails a request", async () => {
    await createGateway(p, "rollout");
    const token = (await p.cli(["ai-gateway", "token", "create", "rollout", "--json"])).stdout;
    const { value } = JSON.parse(token) as { value: string };
    const send = async () => (await callGateway(chatUrl("rollout"), { headers: { "gw-aig-authorization": `Bearer ${value}` }, body: chatBody() })).status;
    assert.equal(await send(), 200); // token created and sent, authentication still off
    const upd = await p.cli(["ai-gateway", "update", "rollout", "--authentication"]);
    assert.equal(upd.code, 0, upd.stderr);
    assert.equal(await send(), 200); // switched on: the same requests keep working
    assert.equal((await callGateway(chatUrl("rollout"), { body: chatBody() })).status, 401);
  });

  it("gives clear errors for unknown account, gateway, provider, and an unreachable upstream", async () => {
    await createGateway(p, "errs");
    const acc = await callGateway(`${p.url}/v1/${"0".repeat(32)}/errs/openai/chat/completions`, { body: chatBody() });
    assert.equal(acc.status, 404);
    assert.match(acc.json.errors[0].message, /no account/);
    const gw = await callGateway(chatUrl("nope"), { body: chatBody() });
    assert.equal(gw.status, 404);
    assert.equal(gw.json.errors[0].code, 7002);
    const prov = await callGateway(`${p.url}/v1/${p.accountId}/errs/not-a-provider/x`, { body: chatBody() });
    assert.equal(prov.status, 400);
    assert.match(prov.json.errors[0].message, /Unknown provider "not-a-provider"/);
  });

  it("answers 502 when the provider cannot be reached, and 504 when it does not answer in time", async () => {
    const dead = await startMockProvider();
    const deadUrl = dead.url;
    await dead.close();
    const q = await startGatewayPlatform([`groq=${deadUrl}`, `openai=${mock.url}`]);
    try {
      await createGateway(q, "down");
      const r = await callGateway(`${q.url}/v1/${q.accountId}/down/groq/chat/completions`, { body: chatBody() });
      assert.equal(r.status, 502);
      assert.equal(r.json.success, false);
      assert.match(r.json.errors[0].message, /Could not reach the provider/);
      // The provider answers (200) only when released: after 30 s, if the gateway's 200 ms timeout never fired.
      const release = mock.holdNextAnswer();
      const safety = setTimeout(release, 30_000);
      const slow = await callGateway(`${q.url}/v1/${q.accountId}/down/openai/chat/completions`, {
        headers: { "gw-aig-request-timeout": "200" },
        body: chatBody(),
      });
      assert.equal(slow.status, 504);
      clearTimeout(safety);
      release();
    } finally {
      await q.dispose();
    }
  });

  it("takes provider-base-url from the platform config file, and refuses a bad one at start", async () => {
    const dir = mkdtempSync(join(tmpdir(), "aig-conf-"));
    writeFileSync(join(dir, "platform.toml"), `provider-base-url = ["openai=${mock.url}"]\n`);
    const q = await startGatewayPlatform([], { stateDir: dir });
    try {
      await createGateway(q, "conf");
      const r = await callGateway(`${q.url}/v1/${q.accountId}/conf/openai/chat/completions`, { body: chatBody("from toml") });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.choices[0].message.content, "echo: from toml");
    } finally {
      await q.dispose();
      rmSync(dir, { recursive: true, force: true });
    }
    await assert.rejects(startGatewayPlatform(["nosuch=http://127.0.0.1:1"]), /unknown provider "nosuch"/);
  });

  it("creates the gateway named default on its first authenticated request, as the hosted gateway does", async () => {
    const anon = await callGateway(chatUrl("default"), { body: chatBody() });
    assert.equal(anon.status, 404);
    const r = await callGateway(chatUrl("default"), { headers: { "gw-aig-authorization": `Bearer ${run.value}` }, body: chatBody() });
    assert.equal(r.status, 200, r.text);
    const g = (await p.api("GET", `/accounts/${p.accountId}/ai-gateway/gateways/default`)).body.result;
    assert.equal(g.authentication, true);
    assert.equal(g.collect_logs, true);
    assert.equal((await callGateway(chatUrl("default"), { body: chatBody() })).status, 401);
  });

  it("retries failed upstream answers per the request headers", async () => {
    await createGateway(p, "retry");
    const before = mock.requests.length;
    mock.failNext(2, 503);
    const r = await callGateway(chatUrl("retry"), {
      headers: { "gw-aig-max-attempts": "3", "gw-aig-retry-delay": "10", "gw-aig-backoff": "exponential" },
      body: chatBody("again"),
    });
    assert.equal(r.status, 200);
    assert.equal(mock.requests.length - before, 3);
    mock.failNext(1, 500);
    const once = await callGateway(chatUrl("retry"), { body: chatBody() });
    assert.equal(once.status, 500, "without retries the provider's failure is passed through");
    // The gateway's own retry settings apply when the request says nothing.
    await createGateway(p, "retry-gw", { retry_max_attempts: 2, retry_delay: 10, retry_backoff: "constant" });
    mock.failNext(1, 502);
    assert.equal((await callGateway(chatUrl("retry-gw"), { body: chatBody() })).status, 200);
    const bad = await callGateway(chatUrl("retry"), { headers: { "gw-aig-max-attempts": "9" }, body: chatBody() });
    assert.equal(bad.status, 400);
    assert.match(bad.json.errors[0].message, /gw-aig-max-attempts/);
  });
});
