import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { TestPlatform } from "../../core/testing/platform.js";
import { callGateway, chatBody, createGateway, createToken, startGatewayPlatform } from "../testing/helpers.js";
import { startMockProvider, type MockProvider } from "../testing/mock-provider.js";

describe("AI gateway logs", () => {
  let mock: MockProvider;
  let p: TestPlatform;
  /** Platforms stopped for a restart; disposed (with their state) after the one that reuses it. */
  const earlier: TestPlatform[] = [];
  const logs = (gw: string, query = "") => p.api("GET", `/accounts/${p.accountId}/ai-gateway/gateways/${gw}/logs${query}`);
  const chat = (gw: string, headers: Record<string, string> = {}, body: unknown = chatBody()) =>
    callGateway(`${p.url}/v1/${p.accountId}/${gw}/openai/chat/completions`, { headers: { authorization: "Bearer sk-x", ...headers }, body });

  before(async () => {
    mock = await startMockProvider();
    p = await startGatewayPlatform([`openai=${mock.url}`]);
  });
  after(async () => {
    await p?.dispose();
    for (const e of earlier) await e.dispose();
    await mock?.close();
  });

  it("writes one log per forwarded request with the answer's log id, usage, cost, metadata and bodies", async () => {
    await createGateway(p, "logged");
    const r = await chat("logged", { "gw-aig-metadata": JSON.stringify({ user: "u1", n: 2, ok: true, a: 1, b: 2, c: 3 }) }, chatBody("first"));
    assert.equal(r.status, 200);
    const id = r.headers["gw-aig-log-id"] as string;
    assert.match(id, /^[0-9A-HJKMNP-TV-Z]{26}$/, "a ULID");

    const one = await p.api("GET", `/accounts/${p.accountId}/ai-gateway/gateways/logged/logs/${id}`);
    assert.equal(one.status, 200);
    const l = one.body.result;
    assert.equal(l.provider, "openai");
    assert.equal(l.model, "gpt-4o-mini");
    assert.equal(l.path, "chat/completions");
    assert.equal(l.status_code, 200);
    assert.equal(l.success, true);
    assert.equal(l.cached, false);
    assert.equal(l.tokens_in, 11);
    assert.equal(l.tokens_out, 7);
    assert.equal(l.cached_tokens, 2);
    assert.equal(l.reasoning_tokens, 3);
    assert.ok(Math.abs(l.cost - (11 * 0.15 + 7 * 0.6) / 1e6) < 1e-12);
    assert.deepEqual(l.metadata, { user: "u1", n: 2, ok: true, a: 1, b: 2 }, "at most five metadata entries");
    assert.equal(typeof l.duration, "number");

    const reqBody = await callGateway(`${p.apiUrl}/accounts/${p.accountId}/ai-gateway/gateways/logged/logs/${id}/request`, {
      method: "GET",
      headers: p.headers(),
    });
    assert.equal(reqBody.json.messages[0].content, "first");
    const resBody = await callGateway(`${p.apiUrl}/accounts/${p.accountId}/ai-gateway/gateways/logged/logs/${id}/response`, {
      method: "GET",
      headers: p.headers(),
    });
    assert.equal(resBody.json.choices[0].message.content, "echo: first");
  });

  it("builds the log of a stream after the answer is out, with usage read from the stream and both bodies", async () => {
    await createGateway(p, "streamed");
    const r = await chat("streamed", {}, chatBody("flow", { stream: true, stream_options: { include_usage: true } }));
    assert.equal(r.status, 200);
    const id = r.headers["gw-aig-log-id"] as string;
    // Asked for at once: the logs API runs pending log jobs and writes the queue before it reads.
    const one = await p.api("GET", `/accounts/${p.accountId}/ai-gateway/gateways/streamed/logs/${id}`);
    assert.equal(one.status, 200, JSON.stringify(one.body));
    assert.equal(one.body.result.tokens_in, 11);
    assert.equal(one.body.result.tokens_out, 7);
    assert.equal(one.body.result.response_size, Buffer.byteLength(r.text));
    const base = `${p.apiUrl}/accounts/${p.accountId}/ai-gateway/gateways/streamed/logs/${id}`;
    const reqBody = await callGateway(`${base}/request`, { method: "GET", headers: p.headers() });
    assert.equal(reqBody.json.messages[0].content, "flow");
    const resBody = await callGateway(`${base}/response`, { method: "GET", headers: p.headers() });
    assert.equal(resBody.text, r.text, "the stream is stored as it was sent");
  });

  it("records null cost with the reason when usage or price is unknown, and custom costs", async () => {
    await createGateway(p, "costs");
    await chat("costs", {}, chatBody("s", { stream: true }));
    await chat("costs", {}, chatBody("m", { model: "my-local-llama" }));
    await chat("costs", { "gw-aig-custom-cost": JSON.stringify({ per_token_in: 0.001, per_token_out: 0.002 }) }, chatBody("c", { model: "my-local-llama" }));
    const all = (await logs("costs", "?order_by=created_at&order_by_direction=asc")).body.result;
    assert.equal(all.length, 3);
    assert.equal(all[0].cost, null);
    assert.match(all[0].cost_note, /no token usage/);
    assert.equal(all[1].cost, null);
    assert.match(all[1].cost_note, /no price is known for model my-local-llama/);
    assert.equal(all[2].custom_cost, true);
    assert.ok(Math.abs(all[2].cost - (11 * 0.001 + 7 * 0.002)) < 1e-12);
  });

  it("honours collect_logs, gw-aig-collect-log and gw-aig-collect-log-payload", async () => {
    await createGateway(p, "quiet", { collect_logs: false });
    const r = await chat("quiet");
    assert.equal(r.headers["gw-aig-log-id"], undefined);
    await chat("quiet", { "gw-aig-collect-log": "true", "gw-aig-collect-log-payload": "false" });
    const l = (await logs("quiet")).body.result;
    assert.equal(l.length, 1);
    assert.equal(l[0].tokens_in, 11, "metadata-only logs keep the usage");
    const body = await p.api("GET", `/accounts/${p.accountId}/ai-gateway/gateways/quiet/logs/${l[0].id}/request`);
    assert.equal(body.status, 404);
  });

  it("lists with filters, pagination and order; patches feedback; deletes by filter", async () => {
    await createGateway(p, "query");
    for (let i = 0; i < 6; i++) await chat("query", { "gw-aig-metadata": JSON.stringify({ team: i % 2 ? "odd" : "even" }) }, chatBody(`m${i}`));
    mock.failNext(1, 500);
    await chat("query");

    const page1 = await logs("query", "?per_page=5&page=1");
    assert.equal(page1.body.result.length, 5);
    assert.equal(page1.body.result_info.total_count, 7);
    assert.equal(page1.body.result_info.total_pages, 2);
    assert.equal((await logs("query", "?per_page=5&page=2")).body.result.length, 2);

    const failed = await logs("query", `?filters=${encodeURIComponent(JSON.stringify([{ key: "success", operator: "eq", value: [false] }]))}`);
    assert.equal(failed.body.result.length, 1);
    assert.equal(failed.body.result[0].status_code, 500);
    assert.equal((await logs("query", "?success=true")).body.result.length, 6);
    const odd = await logs("query", `?filters=${encodeURIComponent(JSON.stringify([{ key: "metadata.value", operator: "eq", value: ["odd"] }]))}`);
    assert.equal(odd.body.result.length, 3);
    const bad = await logs("query", `?filters=${encodeURIComponent(JSON.stringify([{ key: "nope", operator: "eq", value: [1] }]))}`);
    assert.equal(bad.status, 400);
    assert.equal(bad.body.errors[0].code, 7001);
    assert.equal((await logs("query", "?order_by=bogus")).status, 400);

    const cliFailed = await p.cli(["ai-gateway", "logs", "query", "--failed", "--json"]);
    assert.equal(cliFailed.code, 0, cliFailed.stderr);
    assert.deepEqual(
      JSON.parse(cliFailed.stdout).map((l: { status_code: number }) => l.status_code),
      [500],
    );
    const table = await p.cli(["ai-gateway", "logs", "query", "--limit", "3"]);
    assert.equal(table.stdout.trim().split("\n").length, 4, table.stdout);
    assert.match(table.stdout, /openai\/gpt-4o-mini/);

    const asc = (await logs("query", "?order_by=created_at&order_by_direction=asc")).body.result;
    const desc = (await logs("query", "?order_by=created_at&order_by_direction=desc")).body.result;
    assert.equal(asc[0].id, desc.at(-1).id);

    const target = asc[0].id;
    const patched = await p.api("PATCH", `/accounts/${p.accountId}/ai-gateway/gateways/query/logs/${target}`, {
      feedback: 1,
      score: 90,
      metadata: { reviewed: true },
    });
    assert.equal(patched.status, 200);
    const got = (await p.api("GET", `/accounts/${p.accountId}/ai-gateway/gateways/query/logs/${target}`)).body.result;
    assert.equal(got.feedback, 1);
    assert.equal(got.score, 90);
    assert.deepEqual(got.metadata, { reviewed: true });
    assert.equal((await p.api("PATCH", `/accounts/${p.accountId}/ai-gateway/gateways/query/logs/${target}`, { feedback: 5 })).status, 400);

    const del = await p.api(
      "DELETE",
      `/accounts/${p.accountId}/ai-gateway/gateways/query/logs?filters=${encodeURIComponent(JSON.stringify([{ key: "metadata.value", operator: "eq", value: ["even"] }]))}`,
    );
    assert.equal(del.status, 200);
    assert.equal(del.body.success, true);
    // Two "even" logs remain of three: the patch above replaced the first one's metadata.
    assert.equal((await logs("query")).body.result_info.total_count, 5);
    assert.equal((await p.api("GET", `/accounts/${p.accountId}/ai-gateway/gateways/query/logs/01ARZ3NDEKTSV4RRFFQ69G5FAV`)).status, 404);
  });

  it("refuses a flat feedback that is not a number and a delete limit that is not a positive integer, deleting nothing", async () => {
    await createGateway(p, "strict");
    await chat("strict");
    const feedback = await logs("strict", "?feedback=good");
    assert.equal(feedback.status, 400);
    assert.equal(feedback.body.errors[0].code, 7001);
    assert.match(feedback.body.errors[0].message, /^feedback: must be a number/);
    for (const limit of ["-1", "0", "1.5", "x"]) {
      const r = await p.api("DELETE", `/accounts/${p.accountId}/ai-gateway/gateways/strict/logs?limit=${limit}`);
      assert.equal(r.status, 400, limit);
      assert.match(r.body.errors[0].message, /^limit: must be a positive integer/);
    }
    assert.equal((await logs("strict")).body.result_info.total_count, 1);
  });

  it("refuses a filter with more values, or more filters, than the API takes (400), for a list and a delete, deleting nothing", async () => {
    await createGateway(p, "many");
    await chat("many");
    // 2,000 values of one "contains" filter fit the URL: they were an OR of 2,000 LIKEs, past SQLite's expression depth
    // (1,000), answered 500.
    const manyValues = [{ key: "model", operator: "contains", value: Array(2000).fill(1) }];
    const manyFilters = Array.from({ length: 101 }, () => ({ key: "cost", operator: "gt", value: [0] }));
    for (const filters of [manyValues, manyFilters])
      for (const method of ["GET", "DELETE"] as const) {
        const r = await p.api(method, `/accounts/${p.accountId}/ai-gateway/gateways/many/logs?filters=${encodeURIComponent(JSON.stringify(filters))}`);
        assert.equal(r.status, 400, `${method} ${filters.length} filter(s): ${JSON.stringify(r.body).slice(0, 300)}`);
        assert.equal(r.body.errors[0].code, 7001);
      }
    assert.equal((await logs("many")).body.result_info.total_count, 1);
  });

  it("never logs refused requests, and keeps logs across a restart", async () => {
    await createGateway(p, "durable", { authentication: true });
    const run = await createToken(p, ["ai_gateway_run"]);
    for (let i = 0; i < 3; i++) assert.equal((await chat("durable")).status, 401);
    const okIds: string[] = [];
    for (let i = 0; i < 2; i++) {
      const r = await chat("durable", { "gw-aig-authorization": `Bearer ${run.value}` });
      assert.equal(r.status, 200);
      okIds.push(r.headers["gw-aig-log-id"] as string);
    }
    // Stop right away: queued logs are flushed on stop and found after the restart.
    await p.stop();
    const first = p;
    // The state already has its account, so the restarted platform keeps the first start's credentials.
    p = await startGatewayPlatform([`openai=${mock.url}`], { stateDir: first.stateDir });
    const after = await callGateway(`${p.apiUrl}/accounts/${first.accountId}/ai-gateway/gateways/durable/logs?order_by_direction=asc`, {
      method: "GET",
      headers: first.headers(),
    });
    assert.equal(after.status, 200, after.text);
    assert.deepEqual(
      after.json.result.map((l: { id: string }) => l.id),
      okIds,
    );
    earlier.push(first);
  });
});
