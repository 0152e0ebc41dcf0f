// GraphQL Analytics queries over 30 days of per-minute rollups (issue 35's goal: < 100 ms).
//   node bench/analytics/thirty-days.mjs [combinations per minute = 10] [runs = 30]
// Seeds 30 days of rollups (seeded.mjs: N dimension combinations a minute, one zone and one account, four other zones
// as many), and times POST /client/v4/graphql with undici, side by side with a query of an empty range (the request's
// own cost: auth, parse, validation) so the numbers can be read on a shared machine. Beside the times, the platform
// process's CPU time per query (from /proc, summed over the runs): the number a loaded machine changes least.
import { cpus, loadavg } from "node:os";
import { request } from "undici";
import { MINUTES, seededPlatform } from "./seeded.mjs";

const combos = Number(process.argv[2] ?? 10);
const runs = Number(process.argv[3] ?? 30);
const { p, zone, accountId, now, rows, seededMs, serverCpuMs, stop } = await seededPlatform(combos);
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
await stop();
