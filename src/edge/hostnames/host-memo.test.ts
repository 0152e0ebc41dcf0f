import assert from "node:assert/strict";
import { test } from "node:test";
import { HostMemo } from "./host-memo.js";

test("the per-host memo: one computation per host while the generation stays, all again after it changes", () => {
  let generation = 0;
  const computed: string[] = [];
  const memo = new HostMemo(
    (host) => {
      computed.push(host);
      return { host, at: generation };
    },
    () => generation,
  );
  assert.deepEqual(memo.get("a.example"), { host: "a.example", at: 0 });
  memo.get("a.example");
  memo.get("b.example");
  assert.deepEqual(computed, ["a.example", "b.example"]);
  generation++;
  assert.deepEqual(memo.get("a.example"), { host: "a.example", at: 1 }, "a change is obeyed by the next answer");
  assert.equal(memo.size, 1, "everything from before the change is dropped");
  assert.deepEqual(computed, ["a.example", "b.example", "a.example"]);
});

test("the per-host memo is bounded: at most maxEntries hosts, and a Host longer than a DNS name is never kept", () => {
  const memo = new HostMemo(
    (host) => host.length,
    () => 0,
    100,
  );
  for (let i = 0; i < 1000; i++) memo.get(`h${i}.example`);
  assert.ok(memo.size <= 100, `${memo.size} hosts kept`);
  const long = `${"a".repeat(400)}.example`;
  assert.equal(memo.get(long), long.length);
  assert.equal(memo.get(long), long.length);
  assert.ok(memo.size <= 100);
  const kept = memo.size;
  memo.get(`${"b".repeat(16_000)}.example`);
  assert.equal(memo.size, kept, "a 16 KiB Host is answered, not kept");
});
