// Where the edge's CPU goes on its cheapest answer, metrics on: a CPU profile of the platform's process (V8's sampling
// profiler, --cpu-prof) while wrk asks a tenant's hostname with no record (the edge's own 404, counted against the
// zone), scraped every second as cost.mjs does. Prints the share of the process' busy samples (idle left out) spent in
// the end-of-request counting and its parts, and in the scrapes. Shares of one process in one run need no idle machine
// to compare, unlike rates.
//   npm run build && node bench/metrics/profile.mjs [seconds] [--metrics-port-off]
// Runs the unbundled build (dist/cli.js) so functions are named by their module.
import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { freePort, startPlatform } from "../lib/platform.mjs";

const args = process.argv.slice(2);
const metricsOff = args.includes("--metrics-port-off");
const seconds = Number(args.find((a) => !a.startsWith("--")) ?? 15);
const dir = mkdtempSync(join(tmpdir(), "metrics-profile-"));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const port = await freePort();
const metricsPort = metricsOff ? 0 : await freePort();
const children = [];
try {
  const { api, account } = await startPlatform({
    port,
    stateDir: join(dir, "state"),
    children,
    metricsPort,
    cliPath: fileURLToPath(new URL("../../dist/cli.js", import.meta.url)),
    nodeArgs: ["--cpu-prof", "--cpu-prof-dir", join(dir, "profile")],
  });
  const zone = await api("POST", "/zones", { name: "bench.example", account: { id: account } });
  if (!zone.success) throw new Error(JSON.stringify(zone));
  let scraping = metricsPort > 0;
  let scrapes = 0;
  void (async () => {
    while (scraping) {
      await fetch(`http://127.0.0.1:${metricsPort}/metrics`)
        .then((r) => r.text())
        .then(
          () => scrapes++,
          () => {},
        );
      await sleep(1000);
    }
  })();
  const { stdout } = await promisify(execFile)("wrk", ["-t1", "-c16", `-d${seconds}s`, `http://127.0.0.1:${port}/`, "-H", "Host: www.bench.example"]);
  scraping = false;
  console.log(`${/Requests\/sec:\s+([\d.]+)/.exec(stdout)?.[1]} req/s; ${scrapes} scrapes; metrics ${metricsOff ? "off" : "on"}`);
} finally {
  // The profile is written as the process exits.
  for (const child of children) {
    child.kill("SIGTERM");
    if (child.exitCode === null) await new Promise((r) => child.once("exit", r));
  }
}

const profileDir = join(dir, "profile");
const profile = JSON.parse(readFileSync(join(profileDir, readdirSync(profileDir)[0]), "utf8"));
rmSync(dir, { recursive: true, force: true });
const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
const parentOf = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parentOf.set(c, n.id);
const hits = new Map();
for (const id of profile.samples) hits.set(id, (hits.get(id) ?? 0) + 1);
/** What to look for on each sample's stack: a function name in a module (url ending). */
const parts = [
  ["end-of-request counting (dispatch's count: all below)", "count", "/edge/hostnames/dispatch.js"],
  ["  EdgeMetrics.record (the Prometheus counting)", "record", "/edge/metrics.js"],
  ["  the analytics rollups (recordHttpRequest)", "recordHttpRequest", "/edge/analytics/http-requests.js"],
  ["    of which RollupRecorder.add", "add", "/analytics/rollups/recorder.js"],
  ["  the zone lookup (platform.ts zoneOf, also asked by the Host's classification)", "zoneOf", "/platform.js"],
  ["scrapes (Registry.metrics)", "metrics", "prom-client/lib/registry.js"],
];
let busy = 0;
const counted = parts.map(() => 0);
for (const [id, n] of hits) {
  if (nodes.get(id).callFrame.functionName === "(idle)") continue;
  busy += n;
  const found = parts.map(() => false);
  for (let x = id; x !== undefined; x = parentOf.get(x)) {
    const { functionName, url } = nodes.get(x).callFrame;
    parts.forEach(([, name, module], i) => {
      if (functionName === name && url.endsWith(module)) found[i] = true;
    });
  }
  found.forEach((f, i) => f && (counted[i] += n));
}
console.log(`${busy} busy samples of the platform's main thread`);
parts.forEach(([what], i) => console.log(`${((counted[i] / busy) * 100).toFixed(2).padStart(6)}%  ${what}`));
