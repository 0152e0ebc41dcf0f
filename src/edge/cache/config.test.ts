import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { cacheShare, removeUnusedShares, type CacheConfig } from "./config.js";

test("the loops' shares of the cache: budgets split evenly, thread i in threads/<i>; shares of loops a start lacks removed", () => {
  const cfg: CacheConfig = { dir: "/var/cache/edge", maxBytes: 1000, maxObjectBytes: 500, memoryBytes: 90, purgePlan: "pro" };
  assert.equal(cacheShare(cfg, 0, 1), cfg, "one loop: the cache as configured");
  assert.deepEqual(cacheShare(cfg, 0, 3), { ...cfg, maxBytes: 333, memoryBytes: 30 });
  assert.deepEqual(cacheShare(cfg, 2, 3), { ...cfg, dir: "/var/cache/edge/threads/2", maxBytes: 333, memoryBytes: 30 });

  const dir = mkdtempSync(join(tmpdir(), "cache-shares-"));
  try {
    writeFileSync(join(dir, "index.sqlite"), "");
    for (const name of ["1", "2", "3", "01", "x"]) mkdirSync(join(dir, "threads", name), { recursive: true });
    removeUnusedShares(dir, 3);
    assert.deepEqual(readdirSync(join(dir, "threads")).sort(), ["1", "2"]);
    removeUnusedShares(dir, 1);
    assert.deepEqual(readdirSync(join(dir, "threads")), []);
    assert.deepEqual(readdirSync(dir).sort(), ["index.sqlite", "threads"], "the main thread's own files are untouched");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
