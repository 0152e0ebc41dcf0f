// Loaded into `edgecli serve` with `node --import` by secondary-transfer.mjs: every 100 ms, one stderr line with the
// longest event-loop delay of the interval (perf_hooks.monitorEventLoopDelay, 10 ms resolution), the RSS, the V8 heap in
// use and the longest GC pause of the interval (a PerformanceObserver on "gc" entries). Only in
// the main thread: --import runs in the platform's worker threads too (the SQLite checkpoint thread blocks its own
// loop while it checkpoints, which is what it is for).
import { monitorEventLoopDelay, PerformanceObserver } from "node:perf_hooks";
import { isMainThread } from "node:worker_threads";

if (isMainThread) {
  const h = monitorEventLoopDelay({ resolution: 10 });
  h.enable();
  let gcMax = 0;
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) gcMax = Math.max(gcMax, e.duration);
  }).observe({ entryTypes: ["gc"] });
  setInterval(() => {
    const m = process.memoryUsage();
    const line = { t: Date.now(), max_ms: h.max / 1e6, rss_mb: m.rss / 2 ** 20, heap_mb: m.heapUsed / 2 ** 20, gc_max_ms: gcMax };
    process.stderr.write(`LOOPMON ${JSON.stringify(line)}\n`);
    h.reset();
    gcMax = 0;
  }, 100).unref();
}
