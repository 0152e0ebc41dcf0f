#!/usr/bin/env node
// How long does the queue retention sweep hold the event loop? Fills one queue of a real SQLite store (the
// platform's migrations, in a temp dir) with N expired messages, then sweeps them as the platform does (turns of 100,
// setImmediate between) and prints the total time, the longest turn and the event loop's longest delay meanwhile
// (perf_hooks' histogram). Not part of the suite.
//
//   npm run build
//   node bench/queues/sweep.mjs [--messages 100000] [--body-bytes 1024] [--batch 100]
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay, performance } from "node:perf_hooks";
import { numberOption } from "../../scripts/lib/options.mjs";
import { openDatabase } from "../../dist/core/db/sqlite.js";
import { createLogger } from "../../dist/core/logger.js";
import { RetentionSweep } from "../../dist/queues/retention.js";
import { QUEUES_MIGRATIONS } from "../../dist/queues/sqlite-migrations.js";
import { SqliteQueuesStore } from "../../dist/queues/sqlite-store.js";

const MESSAGES = numberOption("messages", 100_000);
const BODY_BYTES = numberOption("body-bytes", 1024);
const BATCH = numberOption("batch", 100);

const dir = mkdtempSync(join(tmpdir(), "queues-sweep-bench-"));
try {
  const db = openDatabase(join(dir, "queues.sqlite"), QUEUES_MIGRATIONS);
  const store = new SqliteQueuesStore(db);
  const q = (await store.createQueue("a".repeat(32), "expiring", { message_retention_period: 60 })).queue_id;
  const body = Buffer.alloc(BODY_BYTES, 120);
  for (let sent = 0; sent < MESSAGES; sent += 100) {
    const n = Math.min(100, MESSAGES - sent);
    await store.enqueue(
      q,
      Array.from({ length: n }, () => ({ body, contentType: "bytes", delaySeconds: 0 })),
      Number.MAX_SAFE_INTEGER,
    );
  }
  const turns = [];
  const timed = Object.create(store);
  timed.sweepExpired = async (nowMs, max) => {
    const t0 = performance.now();
    const n = await store.sweepExpired(nowMs, max);
    turns.push(performance.now() - t0);
    return n;
  };
  const sweep = new RetentionSweep(timed, createLogger({ level: "silent" }), { intervalMs: 60_000, batch: BATCH }, () => Date.now() + 61_000);
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  const t0 = performance.now();
  const removed = await sweep.sweepNow();
  const total = performance.now() - t0;
  loop.disable();
  turns.sort((a, b) => a - b);
  console.log(
    JSON.stringify({
      messages: MESSAGES,
      bodyBytes: BODY_BYTES,
      removed,
      backlogAfter: await store.backlog(q),
      totalMs: Math.round(total),
      turns: turns.length,
      turnMsMedian: +turns[Math.floor(turns.length / 2)].toFixed(2),
      turnMsMax: +turns[turns.length - 1].toFixed(2),
      eventLoopDelayMsMax: +(loop.max / 1e6).toFixed(2),
    }),
  );
  db.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
