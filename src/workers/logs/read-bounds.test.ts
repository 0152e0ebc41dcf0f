import assert from "node:assert/strict";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { openDatabase } from "../../core/db/sqlite.js";
import { testPostgres } from "../../core/testing/backends.js";
import { withTempDir } from "../../core/testing/temp-dir.js";
import { LOGS_PG_MIGRATIONS } from "./pg-migrations.js";
import { LOGS_AREA, PgLogsStore } from "./pg-store.js";
import { parseKeys, parseQuery, parseValues } from "./query.js";
import type { LogsReadBounds } from "./sliced-reads.js";
import { LOGS_MIGRATIONS } from "./sqlite-migrations.js";
import { SqliteLogsStore } from "./sqlite-store.js";
import type { LogsStore, NewLogEvent } from "./store.js";

/**
 * A tenant's Workers Logs query cannot read the whole of its account's events at once: reads walk the timeframe in
 * slices, yielding between them, and examine a bounded number of the newest rows. On SQLite (read on the main thread)
 * one statement held the event loop; on PostgreSQL it held a pooled connection and the server's CPU. Two accounts,
 * the first at its row cap, in a real SQLite file and a real PostgreSQL database; bounds made small so a hundred rows
 * show them.
 */
const A = "a".repeat(32);
const B = "b".repeat(32);
const T0 = 1_700_000_000_000;
const ROWS = 100;
const BOUNDS: LogsReadBounds = { sliceRows: 10, scanRows: 50 };
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

/** A's events 0…ROWS-1 with A at its row cap of ROWS (events older than those were evicted), and one of B's. */
async function fill(store: LogsStore) {
  const cap = { rows: ROWS, bytes: 1 << 30 };
  await store.append(
    Array.from({ length: 20 }, (_, n) => ({ ...event(A, n), timestamp: T0 - (20 - n) * 1000, message: "evicted" })),
    cap,
  );
  await store.append(
    Array.from({ length: ROWS }, (_, n) => event(A, n)),
    cap,
  );
  assert.equal((await store.usage(A)).rows, ROWS, "A is at its row cap");
  await store.append([event(B, 99)], cap);
}

async function withSqlite(run: (store: LogsStore) => Promise<void>) {
  await withTempDir("logs-bounds-", async (dir) => {
    const db = openDatabase(join(dir, "logs.sqlite"), LOGS_MIGRATIONS);
    try {
      const store = new SqliteLogsStore(db, BOUNDS);
      await fill(store);
      await run(store);
    } finally {
      db.close();
    }
  });
}

/** The same on a fresh PostgreSQL database of the run's server; skipped where there is none. */
async function withPostgres(t: TestContext, run: (store: LogsStore) => Promise<void>) {
  const pg = await testPostgres(t, LOGS_AREA, LOGS_PG_MIGRATIONS);
  if (!pg) return t.skip("PostgreSQL not available");
  const store = new PgLogsStore(pg, BOUNDS);
  await fill(store);
  await run(store);
}

test("SQLite: a query that matches nothing yields the event loop between slices instead of reading every row in one go", async () => {
  await withSqlite(async (store) => {
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

/** What a query finds when it examines the newest BOUNDS.scanRows rows of A's timeframe and no more. */
async function assertReadsWithinBounds(store: LogsStore) {
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
}

for (const [backend, withStore] of [
  ["SQLite", (_t: TestContext, run: (store: LogsStore) => Promise<void>) => withSqlite(run)],
  ["PostgreSQL", withPostgres],
] as const)
  test(`${backend}: a query examines only the newest scanRows rows of its timeframe, for an account at its row cap; what it finds there is answered, of its account only`, async (t) => {
    await withStore(t, assertReadsWithinBounds);
  });
