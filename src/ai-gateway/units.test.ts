import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { setImmediate as nextTurn, setTimeout as sleep } from "node:timers/promises";
import { openDatabase } from "../core/db/sqlite.js";
import { gatewayMigrations } from "./gateway-store.js";
import { createLogger } from "../core/logger.js";
import { LogQueue } from "./log-queue.js";
import { LogWriter, type NewLog } from "./log-store.js";
import { ProviderRegistry, upstreamUrl } from "./providers/registry.js";
import { RateLimiter } from "./rate-limiter.js";
import { SseUsageReader, usageOfJson } from "./usage.js";

const log = (i: number, limit: number | null, strategy: NewLog["strategy"]): NewLog => ({
  id: `L${String(i).padStart(8, "0")}`,
  account_id: "a",
  gateway_id: "g",
  created_at: new Date(1e12 + i).toISOString(),
  provider: "openai",
  model: null,
  path: "chat/completions",
  request_type: null,
  status_code: 200,
  success: true,
  cached: false,
  step: null,
  duration: 1,
  tokens_in: null,
  tokens_out: null,
  cached_tokens: null,
  reasoning_tokens: null,
  cost: null,
  cost_note: null,
  custom_cost: false,
  metadata: null,
  request_content_type: null,
  response_content_type: null,
  request_size: 0,
  response_size: 0,
  authenticated: false,
  event_id: null,
  request_body: Buffer.from("q"),
  response_body: null,
  limit,
  strategy,
});

describe("AI gateway parts", () => {
  it("log_management: STOP_INSERTING keeps the first logs, DELETE_OLDEST the newest (real SQLite file)", () => {
    const dir = mkdtempSync(join(tmpdir(), "aig-logs-"));
    try {
      const db = openDatabase(join(dir, "t.sqlite"), gatewayMigrations);
      const w = new LogWriter(db);
      w.writeBatch(Array.from({ length: 10_005 }, (_, i) => log(i, 10_000, "STOP_INSERTING")));
      assert.equal(w.count("a", "g"), 10_000);
      assert.equal(w.full("a", "g", 10_000, "STOP_INSERTING"), true);
      const ids = () => db.prepare("SELECT min(id) AS lo, max(id) AS hi, count(*) AS n FROM logs").get() as { lo: string; hi: string; n: number };
      assert.deepEqual(ids(), { lo: "L00000000", hi: "L00009999", n: 10_000 });
      w.writeBatch(Array.from({ length: 3 }, (_, i) => log(20_000 + i, 10_000, "DELETE_OLDEST")));
      assert.deepEqual(ids(), { lo: "L00000003", hi: "L00020002", n: 10_000 });
      assert.equal(
        (db.prepare("SELECT count(*) AS n FROM logs WHERE request_body IS NOT NULL").get() as { n: number }).n,
        10_000,
        "bodies are kept with their logs",
      );
      db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("log queue: deferred log jobs are built and written together after the answer, and a flush runs pending ones first (real SQLite file)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "aig-queue-"));
    try {
      const db = openDatabase(join(dir, "t.sqlite"), gatewayMigrations);
      const q = new LogQueue(new LogWriter(db), createLogger({ level: "silent" }));
      const stored = () => (db.prepare("SELECT count(*) AS n FROM logs").get() as { n: number }).n;
      let built = 0;
      const job = (i: number) => () => {
        built++;
        q.push(log(i, null, null));
      };

      q.defer(job(1));
      assert.equal(built, 0, "nothing is built in the turn that answered");
      q.flush();
      assert.equal(stored(), 1, "a flush (the logs API, stop) runs the pending job and writes its log");

      q.defer(job(2));
      q.defer(job(3));
      await nextTurn();
      assert.equal(built, 1, "jobs wait for the queue's timer, not just for the next turn");
      for (let i = 0; i < 1000 && stored() < 3; i++) await sleep(5);
      assert.equal(stored(), 3, "the timer built both and wrote them without being asked");
      assert.equal(built, 3);
      db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

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

  it("maps client paths to provider upstreams, with overrides", () => {
    const reg = new ProviderRegistry(["openai=http://127.0.0.1:9/v1/"]);
    const u = (provider: string, path: string, search = "") => String(upstreamUrl(reg.get(provider)!, "acc", path, search));
    assert.equal(u("openai", "chat/completions", "?x=1"), "http://127.0.0.1:9/v1/chat/completions?x=1");
    assert.equal(u("grok", "v1/chat/completions"), "https://api.x.ai/v1/chat/completions");
    assert.equal(u("grok", "chat/completions"), "https://api.x.ai/v1/chat/completions");
    assert.equal(u("anthropic", "v1/messages"), "https://api.anthropic.com/v1/messages");
    assert.equal(u("workers-ai", "@cf/meta/llama-3.1-8b-instruct"), "https://api.cloudflare.com/client/v4/accounts/acc/ai/run/@cf/meta/llama-3.1-8b-instruct");
    assert.equal(u("workers-ai", "v1/chat/completions"), "https://api.cloudflare.com/client/v4/accounts/acc/ai/v1/chat/completions");
    assert.equal(
      u("azure-openai", "res1/dep1/chat/completions", "?api-version=2024-10-21"),
      "https://res1.openai.azure.com/openai/deployments/dep1/chat/completions?api-version=2024-10-21",
    );
    assert.equal(typeof upstreamUrl(reg.get("azure-openai")!, "acc", "", ""), "string");
    assert.equal(reg.get("cerebras-ai")!.id, "cerebras");
    assert.equal(typeof upstreamUrl(reg.get("workers-ai")!, "acc", "../../other/ai/run/x", ""), "string", "no climbing out of the base");
    assert.equal(typeof upstreamUrl(reg.get("openai")!, "acc", "%2e%2e/admin", ""), "string");
    assert.throws(() => new ProviderRegistry(["nope=http://x"]), /unknown provider "nope"/);
    assert.throws(() => new ProviderRegistry(["openai=ftp://x"]), /expected <provider>=<http\(s\) URL>/);
  });

  it("rate limits in fixed and sliding windows", () => {
    const rl = new RateLimiter();
    const t0 = 1_000_000_000_000 - (1_000_000_000_000 % 60_000);
    assert.deepEqual(
      [1, 2, 3].map(() => rl.take("f", 2, 60, "fixed", t0 + 59_000)),
      [true, true, false],
    );
    assert.equal(rl.take("f", 2, 60, "fixed", t0 + 60_000), true, "a fixed window clears at the boundary");
    assert.deepEqual(
      [1, 2].map(() => rl.take("s", 2, 60, "sliding", t0 + 59_000)),
      [true, true],
    );
    // Just after the boundary the previous window's 2 weigh ~1.97: one more fits, a second does not (fixed would allow 2).
    assert.deepEqual(
      [1, 2].map(() => rl.take("s", 2, 60, "sliding", t0 + 61_000)),
      [true, false],
    );
    assert.equal(rl.take("s", 2, 60, "sliding", t0 + 100_000), true);
    assert.equal(rl.take("off", 0, 60, "fixed"), true);
  });
});
