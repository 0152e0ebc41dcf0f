import assert from "node:assert/strict";
import { test } from "node:test";
import { ChangesDuringLoad } from "./changes-during-load.js";

test("a whole reload keeps what changed here while it read: newer entries, and deletions, of those zones only", async () => {
  const loading = new ChangesDuringLoad();
  let copy = new Map([
    ["a", "a1"],
    ["b", "b1"],
    ["c", "c1"],
  ]);
  let readDone!: () => void;
  const reading = new Promise<void>((resolve) => (readDone = resolve));
  const loaded = loading.load(
    async () => {
      await reading;
      // What the store held when the read began: older than the changes below for a, b and d.
      return new Map([
        ["a", "a1"],
        ["b", "b1"],
        ["c", "c2"],
      ]);
    },
    () => copy,
  );
  // While the read runs: a is written here, b deleted, d created (each noted as it lands in the copy).
  loading.changed("a");
  copy.set("a", "a2");
  loading.changed("b");
  copy.delete("b");
  loading.changed("d");
  copy.set("d", "d1");
  readDone();
  copy = await loaded;
  assert.deepEqual(Object.fromEntries(copy), { a: "a2", c: "c2", d: "d1" });
  // Changes after the load are nobody's concern here: the next load reads them.
  loading.changed("c");
  const again = await loading.load(
    async () => new Map([["c", "c3"]]),
    () => copy,
  );
  assert.deepEqual(Object.fromEntries(again), { c: "c3" });
});
