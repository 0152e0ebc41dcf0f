// GraphQL Analytics queries over 30 days of per-minute rollups (issue 35's goal: < 100 ms).
//   node bench/analytics/thirty-days.mjs [combinations per minute = 10] [runs = 30]
// Seeds the rollups of a stopped platform's SQLite state (one zone and one account: 30 days x 1,440 minutes x N
// dimension combinations each, and four other zones as many, so the table is five times the scope read), starts it
// again and times POST /client/v4/graphql with undici, side by side with a query of an empty range (the request's
// own cost: auth, parse, validation) so the numbers can be read on a shared machine. Beside the times, the platform
// process's CPU time per query (from /proc, summed over the runs): the number a loaded machine changes least.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir, cpus, loadavg } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { request } from "undici";
import { startTestPlatform } from "../../dist/core/testing/platform.js";

const combos = Number(process.argv[2] ?? 10);
const runs = Number(process.argv[3] ?? 30);
const stateDir = mkdtempSync(join(tmpdir(), "bench-analytics-"));
const MINUTES = 30 * 1440;

let p = await startTestPlatform({ stateDir });
const zone = (await p.api("POST", "/zones", { name: "bench-analytics.example", account: { id: p.accountId } })).body.result.id;
const accountId = p.accountId;
const credentials = { accountId, email: p.email, apiKey: p.apiKey, token: p.token };
await p.stop();

// The schema is the platform's own (its migrations ran at the first start).
const db = new Database(join(stateDir, "db", "analytics.sqlite"));
const insert = db.prepare(
  `INSERT INTO minute_rollups (dataset, scope, account_id, minute, d1, d2, d3, d4, d5, node_id, count, s1, s2, s3, s4, s5, s6, s7, s8)
   VALUES (?, ?, ?, ?, ?, ?, ?, ?, '', 'bench', ?, ?, ?, ?, 0, 0, 0, 0, 0)`,
);
const now = Math.floor(Date.now() / 60_000) * 60;
const started = performance.now();
const seed = db.transaction((dataset, scope, dims) => {
  for (let m = 0; m < MINUTES; m++) {
    const minute = now - (MINUTES - m) * 60;
    for (let c = 0; c < combos; c++) insert.run(dataset, scope, accountId, minute, ...dims(c), 1 + (c % 7), 1000 * c, c % 2, 0);
  }
});
const http = (c) => [`host${c}.bench-analytics.example`, c % 3 ? "GET" : "POST", c % 5 ? "200" : "404", "dynamic"];
seed("http_requests", zone, http);
for (let z = 0; z < 4; z++) seed("http_requests", `other-zone-${z}`, http);
seed("workers_invocations", accountId, (c) => [`script${c}`, c % 9 ? "success" : "scriptThrewException", "v1", ""]);
// The hourly rollups the platform writes beside the minutes (rollups/sql.ts), from the seeded minutes.
db.exec(`INSERT INTO hour_rollups SELECT dataset, scope, MIN(account_id), minute - (minute % 3600), d1, d2, d3, d4, d5, node_id, SUM(count),
  SUM(s1), SUM(s2), SUM(s3), SUM(s4), SUM(s5), SUM(s6), SUM(s7), SUM(s8) FROM minute_rollups
  GROUP BY dataset, scope, minute - (minute % 3600), d1, d2, d3, d4, d5, node_id`);
const rows = db.prepare("SELECT COUNT(*) AS n FROM minute_rollups").get().n;
db.close();
const seededMs = performance.now() - started;

p = await startTestPlatform({ stateDir, credentials });
const from = new Date((now - MINUTES * 60) * 1000).toISOString();
const to = new Date((now + 60) * 1000).toISOString();
const zoneQuery = (selection, args = "") =>
  `{ viewer { zones(filter: {zoneTag: "${zone}"}) { httpRequestsAdaptiveGroups(limit: 10000, filter: {datetime_geq: "${from}", datetime_lt: "${to}"}${args}) { ${selection} } } } }`;
const queries = {
  "empty range (request cost only)": `{ viewer { zones(filter: {zoneTag: "${zone}"}) { httpRequestsAdaptiveGroups(limit: 10, filter: {datetime_geq: "2020-01-01T00:00:00Z", datetime_lt: "2020-01-01T00:01:00Z"}) { count } } } }`,
  "30 days, one total": zoneQuery("count sum { edgeResponseBytes }"),
  "30 days by date": zoneQuery("count dimensions { date }", ", orderBy: [date_ASC]"),
  "1 day by minute (1,440 groups, minute rollups)": `{ viewer { zones(filter: {zoneTag: "${zone}"}) { httpRequestsAdaptiveGroups(limit: 10000, filter: {datetime_geq: "${new Date((now - 86_400) * 1000).toISOString()}", datetime_lt: "${to}"}, orderBy: [datetimeMinute_ASC]) { count dimensions { datetimeMinute } } } } }`,
  "30 days by hour (720 groups)": zoneQuery("count sum { edgeResponseBytes visits } dimensions { datetimeHour }", ", orderBy: [datetimeHour_ASC]"),
  "30 days, top 10 hosts": zoneQuery("count dimensions { clientRequestHTTPHost }", ", orderBy: [count_DESC]").replace("limit: 10000", "limit: 10"),
  "workersInvocationsAdaptive, 30 days by hour and script": `{ viewer { accounts(filter: {accountTag: "${accountId}"}) { workersInvocationsAdaptive(limit: 10000, filter: {datetime_geq: "${from}", datetime_lt: "${to}"}) { sum { requests errors } dimensions { datetimeHour scriptName } } } } }`,
};

/** The platform process's CPU time so far (user + system), in ms; /proc counts in clock ticks (10 ms on Linux). */
const serverCpuMs = () => {
  const fields = readFileSync(`/proc/${p.process.pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
};
const cpuOf = Object.create(null);

async function time(query, name) {
  const cpu = serverCpuMs();
  const t = performance.now();
  const res = await request(`${p.apiUrl}/graphql`, {
    method: "POST",
    headers: { ...p.headers(), "content-type": "application/json" },
    body: JSON.stringify({ query }),
  });
  const body = await res.body.json();
  const ms = performance.now() - t;
  if (name) cpuOf[name] = (cpuOf[name] ?? 0) + serverCpuMs() - cpu;
  if (res.statusCode !== 200 || body.errors) throw new Error(`query failed: ${JSON.stringify(body.errors)}`);
  return ms;
}
const pct = (xs, q) => xs[Math.min(xs.length - 1, Math.floor(q * xs.length))];

console.log(
  `node ${process.version}, ${cpus().length} × ${cpus()[0].model}, load ${loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")}`,
);
console.log(`seeded ${rows.toLocaleString()} rollup rows in ${(seededMs / 1000).toFixed(1)} s (${combos} combinations/minute/scope, 30 days, 6 scopes)`);
console.log("| query | median ms | p95 ms | max ms | platform CPU ms per query |\n|---|---|---|---|---|");
// Interleaved, so a burst of load on the shared machine falls on every query alike.
const samples = Object.fromEntries(Object.keys(queries).map((k) => [k, []]));
for (const q of Object.values(queries)) await time(q);
for (let i = 0; i < runs; i++) for (const [name, q] of Object.entries(queries)) samples[name].push(await time(q, name));
for (const [name, xs] of Object.entries(samples)) {
  xs.sort((a, b) => a - b);
  console.log(`| ${name} | ${pct(xs, 0.5).toFixed(1)} | ${pct(xs, 0.95).toFixed(1)} | ${xs.at(-1).toFixed(1)} | ${(cpuOf[name] / runs).toFixed(1)} |`);
}
await p.stop();
rmSync(stateDir, { recursive: true, force: true });
