// What the Prometheus metrics cost: edge requests per second (wrk) and DNS queries per second (dnsperf) of two
// platforms side by side, one with the metrics listener (--metrics-port, scraped every second, far more often than
// Prometheus' usual 15 s) and one without (--metrics-port 0: nothing is counted), in interleaved rounds so load from elsewhere on the
// machine falls on both alike.
//   npm run build && node bench/metrics/cost.mjs [seconds per round] [rounds] [--before <checkout>] [--scrape-seconds <s>]
// --scrape-seconds sets how often the "on" platform is scraped (default 1; Prometheus' usual is 15; 0: never, which
// leaves the counting alone to measure). --calibrate starts both platforms without metrics: the ratios it prints are
// the run's noise, what a difference must exceed to mean anything.
// With --before, the platform without metrics runs another checkout's build (e.g. main's, before the metrics of the
// areas existed), so the comparison includes the counting itself, not only the listener and its scrapes.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir, loadavg } from "node:os";
import { join } from "node:path";
import { treeCpuSeconds } from "../dns/proc-stats.mjs";
import { freePort, startPlatform } from "../lib/platform.mjs";

const args = process.argv.slice(2);
const beforeAt = args.indexOf("--before");
const before = beforeAt >= 0 ? args.splice(beforeAt, 2)[1] : undefined;
const scrapeAt = args.indexOf("--scrape-seconds");
const scrapeSeconds = scrapeAt >= 0 ? Number(args.splice(scrapeAt, 2)[1]) : 1;
const calibrateAt = args.indexOf("--calibrate");
const calibrate = calibrateAt >= 0 && args.splice(calibrateAt, 1).length > 0;
const seconds = Number(args[0] ?? 5);
const rounds = Number(args[1] ?? 3);
const dir = mkdtempSync(join(tmpdir(), "metrics-cost-"));
const children = [];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A platform with DNS (the default answering processes) and a zone of 10 A records; `cliPath`: another build's edgecli.js. */
async function startMeasured(name, metricsPort, cliPath) {
  const port = await freePort();
  const dnsPort = await freePort();
  const p = await startPlatform({ port, dnsPort, metricsPort, stateDir: join(dir, name), children, ...(cliPath ? { cliPath } : {}) });
  const zone = await p.api("POST", "/zones", { name: "bench.example", account: { id: p.account } });
  if (!zone.success) throw new Error(JSON.stringify(zone));
  for (let i = 0; i < 10; i++)
    await p.api("POST", `/zones/${zone.result.id}/dns_records`, { type: "A", name: `n${i}.bench.example`, content: `192.0.2.${i + 1}` });
  return { name, port, dnsPort, metricsPort, pid: p.pid };
}

const run = async (cmd, args) => (await promisify(execFile)(cmd, args, { encoding: "utf8" })).stdout;

async function wrk(p) {
  // A tenant's hostname with no record: the edge's own 404 page, counted against the zone (the dispatch and the edge's
  // metrics, with the least other work per request, so their share is at its largest).
  const cpu = treeCpuSeconds(p.pid);
  const out = await run("wrk", ["-t1", "-c16", `-d${seconds}s`, `http://127.0.0.1:${p.port}/`, "-H", "Host: www.bench.example"]);
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0);
  const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? 0);
  return { rate: rps, cpuPer: (treeCpuSeconds(p.pid) - cpu) / requests };
}

async function dnsperf(p) {
  const queries = join(dir, "queries.txt");
  writeFileSync(queries, Array.from({ length: 10 }, (_, i) => `n${i}.bench.example A\nmissing${i}.bench.example AAAA`).join("\n") + "\n");
  const cpu = treeCpuSeconds(p.pid);
  const out = await run("dnsperf", ["-s", "127.0.0.1", "-p", String(p.dnsPort), "-d", queries, "-l", String(seconds), "-c", "4", "-q", "100"]);
  const qps = Number(/Queries per second:\s+([\d.]+)/.exec(out)?.[1] ?? 0);
  const completed = Number(/Queries completed:\s+(\d+)/.exec(out)?.[1] ?? 0);
  return { rate: qps, cpuPer: (treeCpuSeconds(p.pid) - cpu) / completed };
}

let scraping = true;
// Ctrl-C stops the platforms too.
const stopAll = () => {
  for (const c of children) c.kill("SIGTERM");
  process.exit(130);
};
process.on("SIGINT", stopAll);
try {
  const on = await startMeasured("on", calibrate ? 0 : await freePort());
  if (calibrate) console.log("calibration: both platforms without metrics");
  const beforeCli = before && join(before, "dist/bin/edgecli.js");
  const off = await startMeasured("off", 0, beforeCli);
  if (before) console.log(`without metrics: ${beforeCli} (--metrics-port 0)`);
  let scrapes = 0;
  void (async () => {
    while (scraping && scrapeSeconds > 0 && !calibrate) {
      await fetch(`http://127.0.0.1:${on.metricsPort}/metrics`)
        .then((r) => r.text())
        .then(
          () => scrapes++,
          () => {},
        );
      await sleep(scrapeSeconds * 1000);
    }
  })();
  const results = { on: { edge: [], dns: [] }, off: { edge: [], dns: [] } };
  for (let r = 0; r < rounds; r++) {
    for (const p of r % 2 === 0 ? [on, off] : [off, on]) {
      results[p.name].edge.push(await wrk(p));
      results[p.name].dns.push(await dnsperf(p));
    }
    const show = (m) => `${Math.round(m.rate)}/s ${(m.cpuPer * 1e6).toFixed(1)} µs CPU each`;
    console.log(
      `round ${r + 1}: edge on ${show(results.on.edge[r])} | off ${show(results.off.edge[r])}; dns on ${show(results.on.dns[r])} | off ${show(results.off.dns[r])}`,
    );
  }
  const sum = (a) => a.reduce((x, y) => x + y, 0);
  const ratio = (what) => sum(results.on[what].map((m) => m.rate)) / sum(results.off[what].map((m) => m.rate));
  const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
  const cpuRatio = (what) => median(results.on[what].map((m) => m.cpuPer)) / median(results.off[what].map((m) => m.cpuPer));
  console.log(
    `\nload average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")}; ${scrapes} scrapes of the "on" platform (every ${scrapeSeconds} s)`,
  );
  console.log(`edge req/s with metrics / without: ${ratio("edge").toFixed(3)} (${((1 - ratio("edge")) * 100).toFixed(1)}% cost)`);
  console.log(`DNS qps with metrics / without:    ${ratio("dns").toFixed(3)} (${((1 - ratio("dns")) * 100).toFixed(1)}% cost)`);
  // CPU time per request of the platform's process tree: what a saturated machine's throughput is bound by, and far
  // less disturbed by other load than the rates are.
  console.log(`edge CPU per request, with / without (medians): ${cpuRatio("edge").toFixed(3)}`);
  console.log(`DNS CPU per query, with / without (medians):    ${cpuRatio("dns").toFixed(3)}`);
} finally {
  scraping = false;
  process.off("SIGINT", stopAll);
  for (const c of children) c.kill("SIGTERM");
  await sleep(1000);
  rmSync(dir, { recursive: true, force: true });
}
