// CPU per log of the SQLite log store's write path alone (what the log writer thread does with a batch: build
// the records from drafts, insert, commit, and the WAL checkpoints that follow), for one or more checkouts, in
// interleaved rounds so that a shared machine's drift hits them alike. Drafts are shaped like the gateway
// benchmark's (bench.mjs: a small chat request and its JSON answer, both bodies kept).
// Usage: npm run build && node bench/gateway/log-store.mjs [CHECKOUT...]   (default: this checkout)
// Environment: BATCH (logs per batch, default 50: about 10 ms of 5,000 req/s), LOGS (per checkout per round,
// 20000), ROUNDS (3), KEEP_BODIES=0 (drafts whose bodies are not kept), THREAD=0 (write on this thread instead of
// handing batches to the log writer thread as the platform does; the CPU counted is the whole process's),
// CHECKPOINTER=1 (the platform's WAL checkpoint thread takes the file over, core/db/wal-checkpointer.ts, as in
// `edgecli serve`; its CPU is counted too).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = fileURLToPath(new URL("../../", import.meta.url));
const checkouts = (process.argv.slice(2).length ? process.argv.slice(2) : [root]).map((c) => resolve(c));
const BATCH = Number(process.env.BATCH ?? 50);
const LOGS = Number(process.env.LOGS ?? 20_000);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const KEEP_BODIES = process.env.KEEP_BODIES !== "0";
const THREAD = process.env.THREAD !== "0";
const CHECKPOINTER = process.env.CHECKPOINTER === "1";

const requestBody = Buffer.from(JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "Say hello" }] }));
const responseBody = Buffer.from(
  JSON.stringify({
    id: "chatcmpl-bench",
    object: "chat.completion",
    created: 1,
    model: "gpt-4o-mini",
    choices: [{ index: 0, message: { role: "assistant", content: "Hello from the bench upstream." }, finish_reason: "stop" }],
    usage: { prompt_tokens: 11, completion_tokens: 20, total_tokens: 31 },
  }),
);

async function load(checkout) {
  const dist = join(checkout, "dist");
  const [{ openDatabase }, { AI_GATEWAY_MIGRATIONS }, { SqliteLogStore }, { PriceTable }, { newLogId }, { WalCheckpointer }] = await Promise.all([
    ...[
      "core/db/sqlite.js",
      "ai-gateway/sqlite-migrations.js",
      "ai-gateway/logs/sqlite-store.js",
      "ai-gateway/metering/prices.js",
      "ai-gateway/logs/log-id.js",
      "core/db/wal-checkpointer.js",
    ].map((m) => import(pathToFileURL(join(dist, m)).href)),
  ]);
  const dir = mkdtempSync(join(tmpdir(), "log-store-bench-"));
  const db = openDatabase(join(dir, "ai-gateway.sqlite"), AI_GATEWAY_MIGRATIONS);
  const checkpointer = CHECKPOINTER ? new WalCheckpointer({ error: console.error, warn: console.error }) : undefined;
  checkpointer?.adopt(db);
  const prices = PriceTable.load(join(dist, "ai-gateway/metering/prices.json"));
  const store = new SqliteLogStore(db, prices, { writerThread: THREAD });
  const draft = () => ({
    id: newLogId(),
    account_id: "0123456789abcdef0123456789abcdef",
    gateway_id: "bench",
    arrived_at: Date.now(),
    provider: "openai",
    path: "chat/completions",
    request_type: null,
    step: 0,
    status_code: 200,
    success: true,
    outcome: "answered",
    duration: 1,
    usage: null,
    custom_cost: null,
    metadata: null,
    request_content_type: "application/json",
    response_content_type: "application/json",
    request_size: requestBody.length,
    response_size: responseBody.length,
    authenticated: true,
    event_id: null,
    // Copies, as the proxy's captures are buffers of their own.
    request_body: Buffer.from(requestBody),
    response_body: Buffer.from(responseBody),
    keep_bodies: KEEP_BODIES,
    limit: null,
    strategy: null,
  });
  return {
    name: checkout,
    store,
    prices,
    draft,
    dispose: async () => (await store.close(), await checkpointer?.close(), db.close(), rmSync(dir, { recursive: true, force: true })),
  };
}

const subjects = [];
for (const c of checkouts) subjects.push(await load(c));
const cpu = new Map(subjects.map((s) => [s.name, []]));
for (let round = 0; round < ROUNDS + 1; round++) {
  for (let i = 0; i < subjects.length; i++) {
    const s = subjects[(i + round) % subjects.length];
    // Drafts are made before the clock starts: only the store's work is counted.
    const batches = Array.from({ length: Math.ceil(LOGS / BATCH) }, () => Array.from({ length: BATCH }, s.draft));
    const t0 = process.cpuUsage();
    for (const b of batches) await s.store.appendDrafts(b);
    const t = process.cpuUsage(t0);
    // The first round warms up (JIT, the file's first pages).
    if (round > 0) cpu.get(s.name).push((t.user + t.system) / (BATCH * batches.length));
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const out = { batch: BATCH, logs_per_round: LOGS, rounds: ROUNDS, keep_bodies: KEEP_BODIES, thread: THREAD, checkpointer: CHECKPOINTER, cpu_us_per_log: {} };
for (const s of subjects) out.cpu_us_per_log[s.name] = { median: +median(cpu.get(s.name)).toFixed(1), rounds: cpu.get(s.name).map((x) => +x.toFixed(1)) };
console.log(JSON.stringify(out, null, 2));
for (const s of subjects) await s.dispose();
