import assert from "node:assert/strict";
import { after, test } from "node:test";
import { sqliteStoreFactory } from "../../core/testing/contract.js";
import { createLogger } from "../../core/logger.js";
import { OTHER, RecorderLimits, RollupRecorder } from "./recorder.js";
import { ROLLUP_MIGRATIONS } from "./sqlite-migrations.js";
import { SqliteRollupStore } from "./sqlite-store.js";
import type { RollupGroupRow } from "./store.js";

const made = await sqliteStoreFactory(ROLLUP_MIGRATIONS, (db) => new SqliteRollupStore(db))();
after(() => made.close());
const store = made.store;
const log = createLogger({ level: "silent" });
const MINUTE_MS = 60_000;
const at = Date.UTC(2026, 11, 6, 12, 0, 0);

const byDims = (dataset: string, scope: string, dims = 2) =>
  store.query({
    dataset,
    scope,
    from: 0,
    to: 4_000_000_000,
    where: [],
    groupBy: Array.from({ length: dims }, (_, dim) => ({ dim })),
    orderBy: [{ by: "count", desc: true }],
    limit: 10_000,
  });
const sorted = (rows: RollupGroupRow[]) => rows.map((r) => `${r.keys.join("/")}=${r.count}:${r.sums.slice(0, 2).join(",")}`).sort();

test("the recorder adds each combination's counts and sums per dataset, scope and minute, and writes them at flush", async () => {
  const r = new RollupRecorder(store, "node-a", log);
  r.add("d1", "zone-a", "acct", at, ["GET", "200"], [10, 1]);
  r.add("d1", "zone-a", "acct", at + 1_000, ["GET", "200"], [5, 0]);
  r.add("d1", "zone-a", "acct", at, ["POST", "200"], [1, 1]);
  r.add("d1", "zone-b", "acct", at, ["GET", "200"], [7, 1]);
  r.add("d1", "zone-a", "acct", at + MINUTE_MS, ["GET", "200"], [2, 0], 3);
  r.add("d2", "zone-a", "acct", at, ["GET", "200"], [100, 0]);
  // The same values as one dimension fewer are another combination, not the row above.
  r.add("d2", "zone-a", "acct", at, ["GET"], [1, 0]);
  await r.flush();
  assert.deepEqual(sorted(await byDims("d1", "zone-a")), ["GET/200=5:17,1", "POST/200=1:1,1"]);
  assert.deepEqual(sorted(await byDims("d1", "zone-b")), ["GET/200=1:7,1"]);
  assert.deepEqual(sorted(await byDims("d2", "zone-a")), ["GET/200=1:100,0", "GET/=1:1,0"]);
  const minutes = await store.query({
    dataset: "d1",
    scope: "zone-a",
    from: 0,
    to: 4_000_000_000,
    where: [],
    groupBy: [{ time: "minute" }],
    orderBy: [{ by: { group: 0 }, desc: false }],
    limit: 10,
  });
  assert.deepEqual(
    minutes.map((m) => [m.keys[0], m.count]),
    [
      [at / 1000, 3],
      [at / 1000 + 60, 3],
    ],
  );
  // Flushed: nothing is written twice.
  await r.flush();
  assert.deepEqual(sorted(await byDims("d1", "zone-b")), ["GET/200=1:7,1"]);
});

test("past the bound on combinations for one scope and minute, new combinations count as (other); known ones keep counting", async () => {
  const r = new RollupRecorder(store, "node-a", log);
  const bound = RecorderLimits.combinationsPerScopeMinute;
  for (let i = 0; i < bound + 5; i++) r.add("bounded", "zone-a", "acct", at, [`/p${i}`, "200"], [1, 0]);
  r.add("bounded", "zone-a", "acct", at, ["/p0", "200"], [1, 0]);
  // Another scope has a bound of its own.
  r.add("bounded", "zone-b", "acct", at, ["/p-new", "200"], [1, 0]);
  await r.flush();
  const a = await byDims("bounded", "zone-a");
  assert.equal(a.length, bound + 1);
  assert.equal(a.find((g) => g.keys[0] === OTHER && g.keys[1] === OTHER)?.count, 5);
  assert.equal(a.find((g) => g.keys[0] === "/p0")?.count, 2);
  assert.deepEqual(sorted(await byDims("bounded", "zone-b")), ["/p-new/200=1:1,0"]);
});

test("a flush the store refuses keeps its rows, added to what comes after, for the next flush", async () => {
  let failing = true;
  const refusing = {
    add: (nodeId: string, rows: Parameters<typeof store.add>[1]) => (failing ? Promise.reject(new Error("store down")) : store.add(nodeId, rows)),
    query: store.query.bind(store),
    prune: store.prune.bind(store),
    deleteScope: store.deleteScope.bind(store),
  };
  const r = new RollupRecorder(refusing, "node-a", log);
  r.add("kept", "zone-a", "acct", at, ["GET", "200"], [3, 1]);
  await r.flush();
  r.add("kept", "zone-a", "acct", at, ["GET", "200"], [4, 0]);
  r.add("kept", "zone-a", "acct", at, ["GET", "404"], [1, 0]);
  failing = false;
  await r.flush();
  assert.deepEqual(sorted(await byDims("kept", "zone-a")), ["GET/200=2:7,1", "GET/404=1:1,0"]);
});
