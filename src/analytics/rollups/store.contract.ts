import assert from "node:assert/strict";
import { storeContract } from "../../core/testing/contract.js";
import type { RollupRow, RollupStore } from "./store.js";

const A = "a".repeat(32);
const T0 = 1_767_225_600; // 2026-01-01T00:00:00Z, a day's start
const row = (minute: number, dims: string[], count: number, sums: number[] = [], scope = "z1"): RollupRow => ({
  dataset: "http_requests",
  scope,
  accountId: A,
  minute,
  dims,
  count,
  sums,
});
const all = { dataset: "http_requests", scope: "z1", from: 0, to: 2 ** 40, where: [], orderBy: [], limit: 100 };

export const describeRollupStore = storeContract<RollupStore>("RollupStore", (it) => {
  it("adds to a node's row of the same key, and a query sums every node's rows", async (store) => {
    await store.add("node-a", [row(T0, ["www", "GET"], 2, [100, 1])]);
    await store.add("node-a", [row(T0, ["www", "GET"], 3, [50, 0])]);
    await store.add("node-b", [row(T0, ["www", "GET"], 1, [10, 1]), row(T0, ["api", "POST"], 4, [7, 0])]);
    assert.deepEqual(await store.query({ ...all, groupBy: [] }), [{ keys: [], count: 10, sums: [167, 2, 0, 0, 0, 0, 0, 0] }]);
    assert.deepEqual(await store.query({ ...all, groupBy: [{ dim: 0 }] }), [
      { keys: ["api"], count: 4, sums: [7, 0, 0, 0, 0, 0, 0, 0] },
      { keys: ["www"], count: 6, sums: [160, 2, 0, 0, 0, 0, 0, 0] },
    ]);
  });

  it("adds up only the sums a query asks for (the others read 0), from the minutes and the hours alike", async (store) => {
    await store.add("n", [row(T0 + 60, ["a"], 1, [1, 10, 100]), row(T0 + 3600, ["a"], 2, [2, 20, 200]), row(T0 + 7260, ["a"], 4, [4, 40, 400])]);
    for (const [from, to] of [
      [T0, T0 + 3 * 3600],
      [T0 + 60, T0 + 7300],
    ])
      assert.deepEqual(await store.query({ ...all, from, to, groupBy: [{ dim: 0 }], sums: [2, 0] }), [
        { keys: ["a"], count: 7, sums: [7, 0, 700, 0, 0, 0, 0, 0] },
      ]);
    assert.deepEqual(await store.query({ ...all, groupBy: [], sums: [], orderBy: [{ by: { sum: 1 }, desc: true }] }), [
      { keys: [], count: 7, sums: [0, 70, 0, 0, 0, 0, 0, 0] },
    ]);
  });

  it("groups by time buckets, filters on dimensions and the time range, orders and limits", async (store) => {
    await store.add("n", [
      row(T0, ["www", "GET", "200"], 1),
      row(T0 + 60, ["www", "GET", "404"], 2),
      row(T0 + 3600, ["www", "POST", "200"], 4),
      row(T0 + 86_400, ["www", "GET", "200"], 8),
      row(T0, ["www", "GET", "200"], 16, [], "other-zone"),
    ]);
    assert.deepEqual(await store.query({ ...all, groupBy: [{ time: "hour" }] }), [
      { keys: [T0], count: 3, sums: [0, 0, 0, 0, 0, 0, 0, 0] },
      { keys: [T0 + 3600], count: 4, sums: [0, 0, 0, 0, 0, 0, 0, 0] },
      { keys: [T0 + 86_400], count: 8, sums: [0, 0, 0, 0, 0, 0, 0, 0] },
    ]);
    assert.deepEqual(
      (await store.query({ ...all, groupBy: [{ time: "day" }], where: [{ dim: 2, op: "eq", value: "200" }] })).map((g) => [g.keys[0], g.count]),
      [
        [T0, 5],
        [T0 + 86_400, 8],
      ],
    );
    assert.deepEqual(
      (await store.query({ ...all, from: T0 + 60, to: T0 + 3601, groupBy: [{ dim: 1 }], where: [{ dim: 2, op: "neq", value: "500" }] })).map((g) => [
        g.keys[0],
        g.count,
      ]),
      [
        ["GET", 2],
        ["POST", 4],
      ],
    );
    const byCount = await store.query({ ...all, groupBy: [{ time: "minute" }], orderBy: [{ by: "count", desc: true }], limit: 2 });
    assert.deepEqual(
      byCount.map((g) => g.count),
      [8, 4],
    );
  });

  it("reads whole hours from the hourly rollups and the minutes at either end from the minute ones", async (store) => {
    // Minutes in three hours; ranges that start and end inside an hour, and one of whole hours.
    await store.add("n", [row(T0 + 60, ["a"], 1, [10]), row(T0 + 1800, ["a"], 2, [20]), row(T0 + 3600, ["a"], 4, [40]), row(T0 + 7260, ["b"], 8, [80])]);
    await store.add("m", [row(T0 + 3660, ["a"], 16, [160])]);
    const total = async (from: number, to: number) => {
      const [g] = await store.query({ ...all, from, to, groupBy: [] });
      return [g.count, g.sums[0]];
    };
    assert.deepEqual(await total(T0, T0 + 3 * 3600), [31, 310]);
    assert.deepEqual(await total(T0 + 120, T0 + 3 * 3600), [30, 300]);
    assert.deepEqual(await total(T0 + 120, T0 + 7260), [22, 220]);
    assert.deepEqual(await total(T0 + 3600, T0 + 7200), [20, 200]);
    assert.deepEqual(
      (await store.query({ ...all, from: T0 + 120, to: T0 + 3 * 3600, groupBy: [{ time: "hour" }, { dim: 0 }] })).map((g) => [...g.keys, g.count]),
      [
        [T0, "a", 2],
        [T0 + 3600, "a", 20],
        [T0 + 7200, "b", 8],
      ],
    );
  });

  it("prunes minutes before a time, and deletes a scope's rows", async (store) => {
    await store.add("n", [row(T0, ["a"], 1), row(T0 + 60, ["a"], 1), row(T0, ["a"], 1, [], "z2")]);
    assert.equal(await store.prune(T0 + 60), 2);
    assert.deepEqual(
      (await store.query({ ...all, groupBy: [{ time: "minute" }] })).map((g) => g.keys[0]),
      [T0 + 60],
    );
    await store.deleteScope("z1");
    assert.deepEqual(await store.query({ ...all, groupBy: [] }), [{ keys: [], count: 0, sums: [0, 0, 0, 0, 0, 0, 0, 0] }]);
  });
});
