// Loaded into the platform's process by held-memory.mjs (`node --import`): on SIGWINCH it writes a breakdown of the
// memory the process holds to $HELD_MEMORY_FILE (before and, with --expose-gc, after a full GC); on SIGPWR a heap
// snapshot to $HELD_MEMORY_SNAPSHOT. Measurement only, never loaded by `edgecli serve` itself.
import { readFileSync, writeFileSync } from "node:fs";
import v8 from "node:v8";

function breakdown() {
  const rollup = readFileSync("/proc/self/smaps_rollup", "utf8");
  const kib = (field) => Number(new RegExp(`^${field}:\\s+(\\d+)`, "m").exec(rollup)?.[1] ?? NaN);
  return {
    memoryUsage: process.memoryUsage(),
    heap: v8.getHeapStatistics(),
    spaces: v8.getHeapSpaceStatistics().map((s) => ({ name: s.space_name, size: s.space_size, used: s.space_used_size, physical: s.physical_space_size })),
    smaps: { rssKiB: kib("Rss"), anonymousKiB: kib("Anonymous") },
  };
}

process.on("SIGWINCH", () => {
  const out = { beforeGc: breakdown() };
  if (globalThis.gc) {
    globalThis.gc();
    out.afterGc = breakdown();
  }
  writeFileSync(process.env.HELD_MEMORY_FILE, JSON.stringify(out));
});
process.on("SIGPWR", () => writeFileSync(`${process.env.HELD_MEMORY_FILE}.snapshot`, v8.writeHeapSnapshot(process.env.HELD_MEMORY_SNAPSHOT)));
