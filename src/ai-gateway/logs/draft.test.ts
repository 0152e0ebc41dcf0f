import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { A, sampleDraft, shippedPrices } from "../testing/sample-log.js";
import { buildLog } from "./draft.js";

describe("AI gateway log drafts", () => {
  const prices = shippedPrices();
  const request = Buffer.from(JSON.stringify({ model: "gpt-4o-mini", messages: [] }));
  const answer = Buffer.from(JSON.stringify({ model: "gpt-4o-mini-2024-07-18", usage: { prompt_tokens: 100, completion_tokens: 20 } }));

  it("builds a log from an answered draft: usage from the JSON answer, its model priced, the arrival time formatted", () => {
    const log = buildLog(sampleDraft(1, { request_body: request, response_body: answer, metadata: { team: "a" } }), prices);
    assert.equal(log.account_id, A);
    assert.equal(log.created_at, new Date(1e12 + 1000).toISOString());
    assert.deepEqual([log.model, log.tokens_in, log.tokens_out, log.cached], ["gpt-4o-mini-2024-07-18", 100, 20, false]);
    assert.equal(log.cost, (100 * 0.15 + 20 * 0.6) / 1e6);
    assert.deepEqual([log.cost_note, log.custom_cost], [null, false]);
    assert.deepEqual(log.metadata, { team: "a" });
    assert.deepEqual([log.request_body, log.response_body], [request, answer]);
  });

  it("takes a stream's usage as read, the model from the request when the answer names none, and a custom cost", () => {
    const usage = { model: null, tokensIn: 10, tokensOut: 5, cachedTokens: 2, reasoningTokens: null };
    const log = buildLog(
      sampleDraft(2, { request_body: request, response_body: Buffer.from("data: {}\n\n"), usage, custom_cost: { per_token_in: 1, per_token_out: 2 } }),
      prices,
    );
    assert.deepEqual([log.model, log.tokens_in, log.tokens_out, log.cached_tokens], ["gpt-4o-mini", 10, 5, 2]);
    assert.deepEqual([log.cost, log.custom_cost], [20, true]);
  });

  it("records a cache hit with no tokens and no cost, and an aborted answer with the reason; bodies only when kept", () => {
    const hit = buildLog(sampleDraft(3, { request_body: request, response_body: answer, outcome: "cached", keep_bodies: false }), prices);
    assert.deepEqual(
      [hit.cached, hit.tokens_in, hit.tokens_out, hit.cost, hit.cost_note, hit.model],
      [true, 0, 0, 0, "answered from the cache", "gpt-4o-mini"],
    );
    assert.deepEqual([hit.request_body, hit.response_body], [null, null], "gw-aig-collect-log-payload: false");
    const gone = buildLog(sampleDraft(4, { request_body: request, response_body: null, outcome: "aborted", status_code: 499, success: false }), prices);
    assert.deepEqual([gone.status_code, gone.cost, gone.cost_note], [499, null, "the client went away before the answer ended"]);
    const unknown = buildLog(sampleDraft(5, { request_body: null, response_body: Buffer.from('{"usage":{"prompt_tokens":1}}') }), prices);
    assert.deepEqual([unknown.model, unknown.cost, unknown.cost_note], [null, null, "the model is unknown"]);
  });
});
