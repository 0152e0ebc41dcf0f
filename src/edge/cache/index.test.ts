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

/**
 * A purge answers before its rows are deleted (docs/cache.md): the rows are out of service at once, a fill of the
 * same key meanwhile stays the cache's, and a purge the process did not live to sweep is applied on the next open.
 */
test("a purge takes rows out of service at once, sweeps them later, and holds across a restart", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "edge-cache-index-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, "index.sqlite");
  const object = (i: number, fileName = `f${i}`) => {
    const url = `https://www.sweep.example/${i}.css`;
    const now = Date.now();
    return {
      key: `z\n${url}\n`,
      zoneId: "z",
      url,
      file: fileName,
      size: 10,
      status: 200,
      headers: [] as [string, string][],
      storedAt: now,
      initialAge: 0,
      freshUntil: now + 60_000,
      staleWhileRevalidate: 0,
      staleIfError: 0,
    };
  };
  let index = new DiskIndex(file);
  for (let i = 0; i < 10; i++) index.put(object(i), [i < 5 ? "low" : "high"]);
  const removed = index.purge("z", { kind: "tags", tags: ["low"] });
  assert.equal(removed.keys.length, 5);
  assert.equal(index.hasUnswept(), true);
  assert.equal(index.get(object(0).key), undefined, "purged: not served before the sweep");
  assert.equal(index.count(), 5);
  assert.equal(index.purge("z", { kind: "tags", tags: ["low"] }).keys.length, 0, "gone rows are not purged twice");
  // A fill of a purged key before the sweep: the new row is the cache's, and the purge gave the old bytes back already.
  assert.equal(index.put(object(1, "f1-new"), ["low"]), undefined);
  index.sweep(Infinity);
  assert.equal(index.hasUnswept(), false);
  assert.equal(index.get(object(1).key)?.file, "f1-new", "the later fill survives the sweep");
  assert.equal(index.get(object(2).key), undefined);
  assert.equal(index.count(), 6);

  // Only one variant of a URL: the URL and its encoding class.
  index.put({ ...object(7, "f7-br"), key: `z\n${object(7).url}\nbr` }, []);
  assert.equal(index.purge("z", { kind: "urls", urls: [`${object(7).url}\nbr`] }).keys.length, 1);
  assert.ok(index.get(object(7).key), "the identity variant stays");
  index.sweep(Infinity);

  // The process ends before the sweep: the purge is replayed on the next open.
  assert.equal(index.purge("z", { kind: "tags", tags: ["high"] }).keys.length, 5);
  (index as unknown as { db: { close(): void } }).db.close();
  index = new DiskIndex(file);
  t.after(() => index.close());
  assert.deepEqual(index.recovered.files.sort(), ["f5", "f6", "f7", "f8", "f9"]);
  assert.equal(index.get(object(8).key), undefined);
  assert.equal(index.count(), 1);
});
