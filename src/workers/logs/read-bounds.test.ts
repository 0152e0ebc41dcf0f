import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { openDatabase } from "../../core/db/sqlite.js";
import { withTempDir } from "../../core/testing/temp-dir.js";
import { parseKeys, parseQuery, parseValues } from "./query.js";
import { LOGS_MIGRATIONS } from "./sqlite-migrations.js";
import { SqliteLogsStore } from "./sqlite-store.js";
import type { NewLogEvent } from "./store.js";

/**
 * A tenant's Workers Logs query on SQLite (read on the main thread) cannot hold the event loop for the whole of its
 * account's events: reads walk the timeframe in slices, yielding between them, and examine a bounded number of the
 * newest rows. Two accounts in one real SQLite file; bounds made small so a few hundred rows show them.
 */
const A = "a".repeat(32);
const B = "b".repeat(32);
const T0 = 1_700_000_000_000;
const ROWS = 100;
const event = (accountId: string, n: number): NewLogEvent => ({
  accountId,
  script: "w",
  requestId: `r${Math.floor(n / 3)}`,
  timestamp: T0 + n * 1000,
  type: "cf-worker",
  level: "log",
  message: `line ${n} ${n === 0 ? "oldest" : n === 60 ? "findme" : ""}`,
  outcome: "ok",
  trigger: "GET /",
  origin: "fetch",
  body: { source: { message: `line ${n}` }, workers: { scriptName: "w" } },
});
const timeframe = { from: T0, to: T0 + ROWS * 1000 };
const needle = (value: string, view = "events") => parseQuery({ queryId: "q", timeframe, view, limit: 2000, parameters: { needle: { value } } }).query;

async function withStore(run: (store: SqliteLogsStore) => Promise<void>) {
  await withTempDir("logs-bounds-", async (dir) => {
    const db = openDatabase(join(dir, "logs.sqlite"), LOGS_MIGRATIONS);
    try {
      const store = new SqliteLogsStore(db, { sliceRows: 10, scanRows: 50 });
      const big = { rows: 1_000_000, bytes: 1 << 30 };
      await store.append(
        Array.from({ length: ROWS }, (_, n) => event(A, n)),
        big,
      );
      await store.append([event(B, 99)], big);
      await run(store);
    } finally {
      db.close();
    }
  });
}

test("a query that matches nothing yields the event loop between slices instead of reading every row in one go", async () => {
  await withStore(async (store) => {
    for (const run of [
      () => store.events(A, needle("nothing matches")),
      () => store.invocations(A, needle("nothing matches", "invocations")),
      () => store.keys(A, parseKeys({ from: timeframe.from, to: timeframe.to, needle: { value: "nothing matches" } }, Date.now(), 86_400_000).query),
      () =>
        store.values(
          A,
          parseValues({ datasets: ["cloudflare-workers"], key: "$metadata.message", type: "string", timeframe, needle: { value: "nothing matches" } }).query,
        ),
    ]) {
      let turned = false;
      const answer = run();
      setImmediate(() => (turned = true));
      await answer;
      assert.ok(turned, "the event loop turned while the query ran");
    }
  });
});

test("a query examines only the newest scanRows rows of its timeframe; what it finds there is answered, of its account only", async () => {
  await withStore(async (store) => {
    const found = await store.events(A, needle("findme"));
    assert.deepEqual(
      found.events.map((e) => e.message.trim()),
      ["line 60 findme"],
    );
    assert.equal(found.count, 1);
    const beyond = await store.events(A, needle("oldest"));
    assert.equal(beyond.events.length, 0, "the oldest row is past the rows a query examines");
    const all = await store.events(A, needle("line"));
    assert.equal(all.events.length, 50);
    assert.equal(all.count, 50);
    assert.deepEqual(
      all.events.map((e) => e.timestamp),
      Array.from({ length: 50 }, (_, i) => T0 + (ROWS - 1 - i) * 1000),
      "newest first, no row twice, none skipped",
    );
    const invocations = await store.invocations(A, parseQuery({ queryId: "q", timeframe, view: "invocations", limit: 5 }).query);
    assert.deepEqual([...new Set(invocations.map((e) => e.requestId))].sort(), ["r29", "r30", "r31", "r32", "r33"]);
    const values = await store.values(A, parseValues({ datasets: ["cloudflare-workers"], key: "$metadata.service", type: "string", timeframe }).query);
    assert.deepEqual(values, ["w"]);
    assert.ok(
      (await store.keys(A, parseKeys({ from: timeframe.from, to: timeframe.to }, Date.now(), 86_400_000).query)).some((k) => k.key === "$metadata.message"),
    );
    assert.equal((await store.events(B, needle("line"))).events.length, 1, "B's one event, none of A's");
  });
});
