// Loaded into `edgecli serve` with `node --import` by secondary-transfer.mjs: every 100 ms, one stderr line with the
// longest event-loop delay of the interval (perf_hooks.monitorEventLoopDelay, 10 ms resolution) and the RSS. Only in
// the main thread: --import runs in the platform's worker threads too (the SQLite checkpoint thread blocks its own
// loop while it checkpoints, which is what it is for).
import { monitorEventLoopDelay } from "node:perf_hooks";
import { isMainThread } from "node:worker_threads";

if (isMainThread) {
  const h = monitorEventLoopDelay({ resolution: 10 });
  h.enable();
  setInterval(() => {
    process.stderr.write(`LOOPMON ${JSON.stringify({ t: Date.now(), max_ms: h.max / 1e6, rss_mb: process.memoryUsage().rss / 2 ** 20 })}\n`);
    h.reset();
  }, 100).unref();
}
