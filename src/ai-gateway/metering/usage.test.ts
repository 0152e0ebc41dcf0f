import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { SseUsageReader, usageOfJson } from "./usage.js";

describe("AI gateway usage", () => {
  it("reads usage from OpenAI, Anthropic and Google answers and streams, split at any byte", () => {
    const anthropic = [
      'event: message_start\ndata: {"type":"message_start","message":{"model":"claude-sonnet-4-20250514","usage":{"input_tokens":25,"cache_read_input_tokens":5,"output_tokens":1}}}\n\n',
      'event: content_block_delta\ndata: {"type":"content_block_delta","delta":{"type":"text_delta","text":"Hi"}}\n\n',
      'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":15}}\n\n',
    ].join("");
    const bytes = Buffer.from(anthropic);
    for (const step of [1, 7, bytes.length]) {
      const r = new SseUsageReader();
      for (let i = 0; i < bytes.length; i += step) r.push(bytes.subarray(i, i + step));
      assert.deepEqual(r.end(), { model: "claude-sonnet-4-20250514", tokensIn: 30, tokensOut: 15, cachedTokens: 5, reasoningTokens: null });
    }
    const google = usageOfJson(
      Buffer.from(JSON.stringify({ modelVersion: "gemini-2.5-flash", usageMetadata: { promptTokenCount: 8, candidatesTokenCount: 4, thoughtsTokenCount: 2 } })),
    );
    assert.deepEqual(google, { model: "gemini-2.5-flash", tokensIn: 8, tokensOut: 4, cachedTokens: null, reasoningTokens: 2 });
    const responses = new SseUsageReader();
    responses.push(
      Buffer.from(
        'data: {"type":"response.completed","response":{"model":"gpt-4.1","usage":{"input_tokens":3,"output_tokens":9,"output_tokens_details":{"reasoning_tokens":4}}}}\r\n\r\n',
      ),
    );
    assert.deepEqual(responses.end(), { model: "gpt-4.1", tokensIn: 3, tokensOut: 9, cachedTokens: null, reasoningTokens: 4 });
  });
});
