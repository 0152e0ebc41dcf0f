import assert from "node:assert/strict";
import { test } from "node:test";
import { KvReadCache } from "./read-cache.js";
import { parseChange } from "./pg-store.js";

const entry = (value: string, expiration: number | null = null) => ({ value: Buffer.from(value), metadata: null, expiration });
const limits = { maxEntries: 3, maxBytes: 10_000, maxValueBytes: 100, maxAgeMs: 60_000 };

test("KV read cache: serves what was filled, misses included; a drop of the key, its namespace or everything forgets it", () => {
  const cache = new KvReadCache(limits);
  assert.equal(cache.get("ns", "a"), undefined);
  cache.fill(cache.ticket(), "ns", "a", entry("1"));
  cache.fill(cache.ticket(), "ns", "gone", null);
  assert.equal(cache.get("ns", "a")?.value.toString(), "1");
  assert.equal(cache.get("ns", "gone"), null, "a known miss is kept too");
  assert.equal(cache.get("other", "a"), undefined, "per namespace");
  cache.dropKeys("ns", ["a"]);
  assert.equal(cache.get("ns", "a"), undefined);
  assert.equal(cache.get("ns", "gone"), null);
  cache.fill(cache.ticket(), "ns", "a", entry("2"));
  cache.fillNamespace(cache.ticket(), "ns", { accountId: "acc", title: "t" });
  cache.dropNamespace("ns");
  assert.equal(cache.get("ns", "a"), undefined);
  assert.equal(cache.get("ns", "gone"), undefined);
  assert.equal(cache.namespace("ns"), undefined);
  cache.fill(cache.ticket(), "ns", "a", entry("3"));
  cache.clear();
  assert.equal(cache.get("ns", "a"), undefined);
  assert.deepEqual(cache.size, { entries: 0, bytes: 0 });
});

test("KV read cache: a read under way when anything was dropped does not fill (its answer may predate the change)", () => {
  const cache = new KvReadCache(limits);
  const ticket = cache.ticket();
  cache.dropKeys("ns", ["unrelated"]);
  cache.fill(ticket, "ns", "a", entry("stale?"));
  assert.equal(cache.get("ns", "a"), undefined);
  const before = cache.ticket();
  cache.dropNamespace("x");
  cache.fillNamespace(before, "ns", { accountId: "acc", title: "old title" });
  assert.equal(cache.namespace("ns"), undefined);
});

test("KV read cache: nothing is served past its max age or the entry's own expiration", () => {
  let now = 1_000_000;
  const cache = new KvReadCache(limits, () => now);
  cache.fill(cache.ticket(), "ns", "a", entry("1"));
  cache.fill(cache.ticket(), "ns", "b", entry("2", Math.floor(now / 1000) + 5));
  cache.fillNamespace(cache.ticket(), "ns", { accountId: "acc", title: "t" });
  now += 5_000;
  assert.equal(cache.get("ns", "b"), undefined, "expired at its expiration");
  assert.equal(cache.get("ns", "a")?.value.toString(), "1");
  now += 55_000;
  assert.equal(cache.get("ns", "a"), undefined, "60 s after it was read");
  assert.equal(cache.namespace("ns"), undefined);
});

test("KV read cache: bounded in entries and bytes (least recently used out first); big values never kept", () => {
  const cache = new KvReadCache(limits);
  for (const k of ["a", "b", "c"]) cache.fill(cache.ticket(), "ns", k, entry(k));
  cache.get("ns", "a");
  cache.fill(cache.ticket(), "ns", "d", entry("d"));
  assert.equal(cache.size.entries, 3);
  assert.equal(cache.get("ns", "b"), undefined, "the least recently used went");
  assert.ok(cache.get("ns", "a") && cache.get("ns", "c") && cache.get("ns", "d"));
  cache.fill(cache.ticket(), "ns", "big", entry("x".repeat(101)));
  assert.equal(cache.get("ns", "big"), undefined);

  const small = new KvReadCache({ ...limits, maxEntries: 1000, maxBytes: 1000 });
  for (let i = 0; i < 50; i++) small.fill(small.ticket(), "ns", `k${i}`, entry("y".repeat(90)));
  assert.ok(small.size.bytes <= 1000, `${small.size.bytes} bytes kept`);
  assert.ok(small.get("ns", "k49"), "the newest stays");
});

test("KV read cache keys and bus notices: a namespace id may hold any character", () => {
  const cache = new KvReadCache(limits);
  cache.fill(cache.ticket(), "a/b", "c", entry("1"));
  assert.equal(cache.get("a", "b/c"), undefined);
  const key = "ключ:/x";
  assert.deepEqual(parseChange(`key:ns:1:${Buffer.from(key).toString("hex")}`), { namespaceId: "ns:1", key });
  assert.deepEqual(parseChange("ns:ns:1"), { namespaceId: "ns:1" });
  assert.equal(parseChange("whatever"), undefined);
});
