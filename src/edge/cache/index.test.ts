import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { DiskIndex } from "./disk-index.js";

/** The index is on disk: 100,000 objects cost SQLite's bounded page cache, not the heap (issue 34 item 6: < 100 MiB). */
test("an index of 100,000 objects stays far under 100 MiB of memory, and a purge of one tag removes only its objects", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "edge-cache-index-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  global.gc?.();
  const before = process.memoryUsage();
  const index = new DiskIndex(join(dir, "index.sqlite"));
  t.after(() => index.close());
  const now = Date.now();
  const headers: [string, string][] = [
    ["content-type", "application/javascript"],
    ["etag", '"0123456789abcdef"'],
  ];
  const put = (i: number) => {
    const url = `https://www.index-test.example/assets/${i}/app.js?v=${i}`;
    index.put(
      {
        key: `z\n${url}\n`,
        zoneId: "z",
        url,
        file: `${(i % 256).toString(16).padStart(2, "0")}/${i}`,
        size: 1024,
        status: 200,
        headers,
        storedAt: now,
        initialAge: 0,
        freshUntil: now + 3_600_000,
        staleWhileRevalidate: 0,
        staleIfError: 0,
      },
      [`group-${i % 1000}`, "all"],
    );
  };
  for (let batch = 0; batch < 100; batch++)
    index.transaction(() => {
      for (let i = batch * 1000; i < (batch + 1) * 1000; i++) put(i);
    });
  global.gc?.();
  const after = process.memoryUsage();
  const grew = (after.rss - before.rss) / 1024 / 1024;
  t.diagnostic(`RSS grew ${grew.toFixed(1)} MiB for 100,000 objects (heap ${((after.heapUsed - before.heapUsed) / 1024 / 1024).toFixed(1)} MiB)`);
  assert.ok(grew < 100, `RSS grew ${grew.toFixed(1)} MiB`);
  assert.equal(index.count(), 100_000);
  assert.equal(index.totalBytes(), 100_000 * 1024);
  const removed = index.purge("z", { kind: "tags", tags: ["group-7"] });
  assert.equal(removed.keys.length, 100);
  assert.equal(index.count(), 99_900);
  assert.equal(index.purge("other-zone", { kind: "tags", tags: ["all"] }).keys.length, 0, "a purge reaches only its zone");
});
