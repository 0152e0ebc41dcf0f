// The largest GraphQL Analytics query the limits allow: 20 dataset reads (QueryLimits.datasetReads; aliases of one
// dataset count as reads) of 10,000 groups each (MAX_LIMIT), over 30 days of rollups (seeded.mjs). What it costs the
// platform: its CPU time (/proc), the growth of its peak RSS (VmHWM, reset before each query through clear_refs), the
// answer's size, and how long the event loop stalls — the slowest answer to a cheap request (GET /user/tokens/verify)
// sent in a loop while the query runs, beside the same probe's slowest answer with no query running.
//   npm run build && node bench/analytics/twenty-reads.mjs [combinations per minute = 10] [runs = 3]
import { readFileSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { request } from "undici";
import { MINUTES, seededPlatform } from "./seeded.mjs";

const combos = Number(process.argv[2] ?? 10);
const runs = Number(process.argv[3] ?? 3);
const { p, zone, now, rows, seededMs, serverCpuMs, stop } = await seededPlatform(combos);
const from = new Date((now - MINUTES * 60) * 1000).toISOString();
const to = new Date((now + 60) * 1000).toISOString();

/** `reads` aliases of httpRequestsAdaptiveGroups, each asking 10,000 groups of `dimensions` over 30 days. */
const query = (reads, dimensions, order) =>
  `{ viewer { zones(filter: {zoneTag: "${zone}"}) { ${Array.from(
    { length: reads },
    (_, i) =>
      `r${i}: httpRequestsAdaptiveGroups(limit: 10000, filter: {datetime_geq: "${from}", datetime_lt: "${to}"}, orderBy: [${order}]) { count sum { edgeResponseBytes } dimensions { ${dimensions} } }`,
  ).join(" ")} } } }`;
const cases = {
  "1 read by minute (43,200 groups, 10,000 answered)": query(1, "datetimeMinute", "datetimeMinute_DESC"),
  "20 reads by minute": query(20, "datetimeMinute", "datetimeMinute_DESC"),
  "1 read by minute and host (432,000 groups, 10,000 answered)": query(1, "datetimeMinute clientRequestHTTPHost", "count_DESC"),
  "20 reads by minute and host": query(20, "datetimeMinute clientRequestHTTPHost", "count_DESC"),
  "3 reads by minute and host (QueryLimits.rows: 30,000)": query(3, "datetimeMinute clientRequestHTTPHost", "count_DESC"),
};

const pid = p.process.pid;
const status = (field) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, "utf8"))[1]) / 1024;

/** Cheap requests one after another until `until` settles; the slowest answer's ms. */
async function probe(until) {
  let done = false;
  until.finally(() => (done = true));
  let slowest = 0;
  while (!done) {
    const t = performance.now();
    const res = await request(`${p.apiUrl}/user/tokens/verify`, { headers: p.headers() });
    await res.body.text();
    slowest = Math.max(slowest, performance.now() - t);
  }
  return slowest;
}

async function run(q) {
  writeFileSync(`/proc/${pid}/clear_refs`, "5"); // resets VmHWM to the current RSS
  const rssBefore = status("VmRSS");
  const cpu = serverCpuMs();
  const t = performance.now();
  const answer = request(`${p.apiUrl}/graphql`, {
    method: "POST",
    headers: { ...p.headers(), "content-type": "application/json" },
    body: JSON.stringify({ query: q }),
  }).then(async (res) => ({ status: res.statusCode, text: await res.body.text() }));
  const slowestProbe = await probe(answer);
  const { status: code, text } = await answer;
  const ms = performance.now() - t;
  const body = JSON.parse(text);
  const groups = Object.values(body.data?.viewer?.zones?.[0] ?? {}).reduce((n, g) => n + (g?.length ?? 0), 0);
  return { code, errors: body.errors, ms, cpu: serverCpuMs() - cpu, peak: status("VmHWM") - rssBefore, bytes: text.length, groups, slowestProbe };
}

console.log(
  `node ${process.version}, ${cpus().length} × ${cpus()[0].model}, load ${loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")}`,
);
console.log(`seeded ${rows.toLocaleString()} rollup rows in ${(seededMs / 1000).toFixed(1)} s (${combos} combinations/minute/scope, 30 days, 6 scopes)`);
const idle = await probe(new Promise((r) => setTimeout(r, 2000)));
console.log(`slowest probe with no query running: ${idle.toFixed(1)} ms`);
console.log(
  "| query | status | groups answered | answer MB | wall ms | platform CPU ms | peak RSS growth MiB | slowest probe ms |\n|---|---|---|---|---|---|---|---|",
);
for (let i = 0; i < runs; i++)
  for (const [name, q] of Object.entries(cases)) {
    const r = await run(q);
    const refused = r.errors ? ` (${String(r.errors[0]?.message).slice(0, 80)})` : "";
    console.log(
      `| ${name} | ${r.code}${refused} | ${r.groups} | ${(r.bytes / 1048576).toFixed(1)} | ${r.ms.toFixed(0)} | ${r.cpu} | ${r.peak.toFixed(0)} | ${r.slowestProbe.toFixed(0)} |`,
    );
  }
await stop();
