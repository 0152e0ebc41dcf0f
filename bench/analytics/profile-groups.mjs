// Where the time of thirty-days.mjs's largest answer goes (workersInvocationsAdaptive by hour and script over 30
// days: 7,200 groups), in one process without HTTP: the store's SQL, the dataset's rows, the GraphQL execution, and
// JSON. Wall and CPU time of this process side by side: on a shared machine the CPU time is the steadier number.
//   npm run build && node bench/analytics/profile-groups.mjs [dist]
// Seeds the rollups once (kept in $TMPDIR/bench-analytics-profile.sqlite for the next run; delete it to seed again).
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
const dist = new URL(process.argv[2] ?? "../../dist", import.meta.url).href.replace(/\/$/, "");
const { SqliteRollupStore } = await import(`${dist}/analytics/rollups/sqlite-store.js`);
const { ROLLUP_MIGRATIONS } = await import(`${dist}/analytics/rollups/sqlite-migrations.js`);
const { groupedDataset } = await import(`${dist}/analytics/grouped-dataset.js`);
const { AnalyticsSchema } = await import(`${dist}/analytics/schema.js`);
const { workersInvocationsSpec } = await import(`${dist}/workers/analytics.js`);
const file = join(tmpdir(), "bench-analytics-profile.sqlite");
const fresh = !existsSync(file);
const MINUTES = 30 * 1440;
const now = Math.floor(Date.now() / 60_000) * 60;
const raw = new Database(file);
raw.pragma("journal_mode = WAL");
let version = raw.pragma("user_version", { simple: true });
if (fresh) {
  for (const m of ROLLUP_MIGRATIONS) raw.exec(m);
  raw.pragma(`user_version = ${ROLLUP_MIGRATIONS.length}`);
  const insert =
    raw.prepare(`INSERT INTO minute_rollups (dataset, scope, account_id, minute, d1, d2, d3, d4, d5, node_id, count, s1, s2, s3, s4, s5, s6, s7, s8)
   VALUES (?, ?, ?, ?, ?, ?, ?, ?, '', 'bench', ?, ?, ?, ?, 0, 0, 0, 0, 0)`);
  raw.transaction(() => {
    for (const scope of ["acct", "other1", "other2"])
      for (let m = 0; m < MINUTES; m++)
        for (let c = 0; c < 10; c++)
          insert.run(
            "workers_invocations",
            scope,
            scope,
            now - (MINUTES - m) * 60,
            `script${c}`,
            c % 9 ? "success" : "scriptThrewException",
            "v1",
            "",
            1 + (c % 7),
            1000 * c,
            c % 2,
            0,
          );
  })();
  raw.exec(`INSERT INTO hour_rollups SELECT dataset, scope, MIN(account_id), minute - (minute % 3600), d1, d2, d3, d4, d5, node_id, SUM(count),
  SUM(s1), SUM(s2), SUM(s3), SUM(s4), SUM(s5), SUM(s6), SUM(s7), SUM(s8) FROM minute_rollups
  GROUP BY dataset, scope, minute - (minute % 3600), d1, d2, d3, d4, d5, node_id`);
}
// Later migrations (if the build adds any) run on the copy.
const migrations = ROLLUP_MIGRATIONS;
version = raw.pragma("user_version", { simple: true });
for (let v = version; v < migrations.length; v++) raw.exec(migrations[v]);
raw.pragma(`user_version = ${migrations.length}`);
raw.close();
const db = new Database(file);
const store = new SqliteRollupStore(db);
const rollups = { record() {}, query: (q) => store.query(q), retentionSeconds: 31 * 86400 };
const ds = groupedDataset(workersInvocationsSpec, rollups);
const schema = new AnalyticsSchema([ds]);
const from = new Date((now - MINUTES * 60) * 1000).toISOString();
const to = new Date((now + 60) * 1000).toISOString();
const query = `{ viewer { accounts(filter: {accountTag: "acct"}) { workersInvocationsAdaptive(limit: 10000, filter: {datetime_geq: "${from}", datetime_lt: "${to}"}) { sum { requests errors } dimensions { datetimeHour scriptName } } } } }`;
const caller = { sees: () => true, can: () => true };
const q = {
  dataset: "workers_invocations",
  scope: "acct",
  from: Math.ceil((now - MINUTES * 60) / 60) * 60,
  to: now + 60,
  where: [],
  groupBy: [{ time: "hour" }, { dim: 0 }],
  orderBy: [],
  limit: 10000,
  sums: [0],
};
const time = async (name, fn, n = 15) => {
  await fn();
  const xs = [];
  const cpu = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    const c = process.cpuUsage();
    await fn();
    const d = process.cpuUsage(c);
    xs.push(performance.now() - t);
    cpu.push((d.user + d.system) / 1000);
  }
  xs.sort((a, b) => a - b);
  cpu.sort((a, b) => a - b);
  console.log(`${name}: wall median ${xs[n >> 1].toFixed(1)} ms (min ${xs[0].toFixed(1)}), CPU median ${cpu[n >> 1].toFixed(1)} ms (min ${cpu[0].toFixed(1)})`);
};
await time("store.query (SQL + rows)", () => store.query(q));
await time("dataset.resolve", () =>
  ds.resolve(
    "acct",
    { limit: 10000, filter: { datetime_geq: from, datetime_lt: to } },
    { dimensions: ["datetimeHour", "scriptName"], sums: ["requests", "errors"], fields: ["sum", "dimensions"] },
  ),
);
let size = 0;
await time("schema.run (GraphQL)", async () => {
  const r = await schema.run({ query }, caller);
  if (r.errors) throw new Error(JSON.stringify(r.errors));
  size = r.data.viewer.accounts[0].workersInvocationsAdaptive.length;
});
await time("schema.run + JSON.stringify", async () => JSON.stringify(await schema.run({ query }, caller)));
console.log("groups", size);
if (process.env.EXPLAIN) {
  const { querySql } = await import(`${dist}/analytics/rollups/sql.js`);
  const { sql, params } = querySql("minute_rollups", q);
  console.log(sql);
  for (const r of db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params)) console.log(r.detail);
}
