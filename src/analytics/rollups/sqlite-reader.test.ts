import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { openDatabase } from "../../core/db/sqlite.js";
import { withTempDir } from "../../core/testing/temp-dir.js";
import { SqliteRollupReader } from "./sqlite-reader.js";
import { ROLLUP_MIGRATIONS } from "./sqlite-migrations.js";
import { SqliteRollupStore } from "./sqlite-store.js";
import type { RollupRow } from "./store.js";

/**
 * The SQLite rollups are queried on a thread of their own: a query's grouping (a 30-day read by minute is hundreds of
 * thousands of rows) never holds the platform's event loop. A real file, written by the main thread's connection and
 * read by the thread's.
 */
const T0 = 1_767_225_600;
const rows = (n: number, scope = "z1"): RollupRow[] =>
  Array.from({ length: n }, (_, i) => ({
    dataset: "http_requests",
    scope,
    accountId: "a",
    minute: T0 + 60 * Math.floor(i / 10),
    dims: [`host${i % 10}`],
    count: 1,
    sums: [i],
  }));

test("a query of the SQLite rollups runs off the event loop, sees what was just written, and of its scope only", async () => {
  await withTempDir("rollup-reader-", async (dir) => {
    const db = openDatabase(join(dir, "analytics.sqlite"), ROLLUP_MIGRATIONS);
    const store = new SqliteRollupStore(db);
    try {
      await store.add("n", rows(20_000));
      await store.add("n", rows(5, "z2"));
      const q = {
        dataset: "http_requests",
        scope: "z1",
        from: T0,
        to: T0 + 2 * 86_400,
        where: [],
        orderBy: [],
        limit: 10_000,
        groupBy: [{ time: "minute" as const }],
      };
      const answer = store.query(q);
      let turned = false;
      setImmediate(() => (turned = true));
      const groups = await answer;
      assert.ok(turned, "the event loop turned while the query ran");
      assert.equal(groups.length, 2_000);
      assert.equal(
        groups.reduce((n, g) => n + g.count, 0),
        20_000,
      );
      // Written after the thread opened its connection: the next query sees it.
      await store.add("n", [{ dataset: "http_requests", scope: "z1", accountId: "a", minute: T0 + 86_000, dims: ["late"], count: 7, sums: [] }]);
      const late = await store.query({ ...q, groupBy: [{ dim: 0 }], where: [{ dim: 0, op: "eq", value: "late" }] });
      assert.deepEqual(
        late.map((g) => [g.keys[0], g.count]),
        [["late", 7]],
      );
      assert.equal((await store.query({ ...q, scope: "z2", groupBy: [] }))[0].count, 5);
    } finally {
      await store.close();
      db.close();
    }
  });
});

test("the read thread: a bad statement or a missing file is that read's error; after its idle time it ends, and the next read starts another", async () => {
  await withTempDir("rollup-reader-", async (dir) => {
    const missing = new SqliteRollupReader(join(dir, "missing.sqlite"));
    await assert.rejects(missing.all("SELECT 1", []), /unable to open|does not exist|SQLITE_CANTOPEN/i);
    await missing.close();
    const db = openDatabase(join(dir, "analytics.sqlite"), ROLLUP_MIGRATIONS);
    const reader = new SqliteRollupReader(db.name, 10);
    try {
      await assert.rejects(reader.all("SELECT nope FROM nowhere", []), /no such table/);
      assert.deepEqual(await reader.all("SELECT 1 AS one", []), [{ one: 1 }]);
      await new Promise((r) => setTimeout(r, 200));
      assert.deepEqual(await reader.all("SELECT ? AS two", [2]), [{ two: 2 }], "a new thread after the idle one ended");
    } finally {
      await reader.close();
      db.close();
    }
  });
});
