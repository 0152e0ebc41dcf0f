// Two builds' 1 KiB HIT, compared over many fresh platforms: a platform's CPU a HIT varies by about ±7% from one
// started platform to the next (docs/benchmarks.md, "The HIT, session 24"), as much as a change on the HIT's path may
// gain, so one platform a build cannot tell them apart. Each pair starts one platform of each build (alternating which
// goes first), makes the bench's proxied zone, warms it to HIT, and measures it with wrk in turns (`runs` runs a
// platform, interleaved); a platform's figure is the median of its runs. Prints each pair and the medians over all.
// Run as root (the origin, nginx, listens on port 80):
//   node bench/cache/hit-ab.mjs <before dist/bin/edgecli.js> [pairs] [seconds] [runs]
// BENCH_AFTER_CLI (default this checkout's build), BENCH_PORT_BASE (default 18390), BENCH_ORIGIN (default 127.0.0.144).
import { execFileSync } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startHitOrigin } from "../lib/hit-origin.mjs";
import { startPlatform } from "../lib/platform.mjs";
import { median } from "../lib/stats.mjs";

const [beforeCli, pairsText = "6", secondsText = "4", runsText = "3"] = process.argv.slice(2);
if (!beforeCli) {
  console.error("usage: node bench/cache/hit-ab.mjs <before dist/bin/edgecli.js> [pairs] [seconds] [runs]");
  process.exit(2);
}
const afterCli = process.env.BENCH_AFTER_CLI ?? fileURLToPath(new URL("../../dist/bin/edgecli.js", import.meta.url));
const pairs = Number(pairsText);
const seconds = Number(secondsText);
const runs = Number(runsText);
const base = Number(process.env.BENCH_PORT_BASE ?? 18390);
const ORIGIN = process.env.BENCH_ORIGIN ?? "127.0.0.144";
const HOST = "www.bench-cache.example";
const dir = mkdtempSync(join(tmpdir(), "edge-hit-ab-"));
chmodSync(dir, 0o755);
const children = [];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const cpuMicros = (pid) => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
};

function measured(port, pid) {
  const before = cpuMicros(pid);
  const out = execFileSync("wrk", ["-t2", "-c32", `-d${seconds}s`, "-H", `Host: ${HOST}`, `http://127.0.0.1:${port}/1k.js`], { encoding: "utf8" });
  const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? 0);
  if (/Non-2xx/.test(out)) throw new Error(`port ${port}: answers not 2xx`);
  return { rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0), cpu: (cpuMicros(pid) - before) / Math.max(1, requests) };
}

async function started(cli, port, name) {
  const platform = await startPlatform({ port, stateDir: join(dir, name), children, cliPath: cli });
  await platform.proxiedZone("bench-cache.example", ORIGIN);
  for (let t = 0; t < 60; t++) {
    let head = "";
    try {
      head = execFileSync("curl", ["-s", "-o", "/dev/null", "-D", "-", "-H", `Host: ${HOST}`, `http://127.0.0.1:${port}/1k.js`], { encoding: "utf8" });
    } catch {
      /* the origin is starting */
    }
    if (/cf-cache-status: HIT/i.test(head)) return platform;
    await sleep(250);
  }
  throw new Error(`${name} never answered HIT`);
}

try {
  startHitOrigin(dir, ORIGIN, children);
  console.log(
    `# ${new Date().toISOString()} ${cpus().length} × ${cpus()[0].model}, Node ${process.version}, load ${loadavg()[0].toFixed(1)}; ${pairs} pairs, ${runs} × ${seconds} s runs a platform, wrk -t2 -c32`,
  );
  const after = [];
  const before = [];
  for (let p = 0; p < pairs; p++) {
    const a = await started(afterCli, base + 1, `after-${p}`);
    const b = await started(beforeCli, base + 2, `before-${p}`);
    const runsA = [];
    const runsB = [];
    for (let r = 0; r < runs; r++) {
      // Alternate which build goes first, run by run and pair by pair.
      if ((r + p) % 2 === 0) {
        runsA.push(measured(base + 1, a.pid));
        runsB.push(measured(base + 2, b.pid));
      } else {
        runsB.push(measured(base + 2, b.pid));
        runsA.push(measured(base + 1, a.pid));
      }
    }
    const ma = { rps: median(runsA.map((x) => x.rps)), cpu: median(runsA.map((x) => x.cpu)) };
    const mb = { rps: median(runsB.map((x) => x.rps)), cpu: median(runsB.map((x) => x.cpu)) };
    after.push(ma);
    before.push(mb);
    console.log(
      `pair ${p + 1} (load ${loadavg()[0].toFixed(1)}): after ${ma.rps.toFixed(0)} req/s ${ma.cpu.toFixed(1)} µs, before ${mb.rps.toFixed(0)} req/s ${mb.cpu.toFixed(1)} µs; after / before req/s ${(ma.rps / mb.rps).toFixed(2)}, CPU ${(ma.cpu / mb.cpu).toFixed(2)}`,
    );
    for (const platform of [a, b]) platform.process.kill("SIGTERM");
    await sleep(1500);
  }
  console.log(
    `medians over the pairs: after ${median(after.map((x) => x.cpu)).toFixed(1)} µs a HIT, before ${median(before.map((x) => x.cpu)).toFixed(1)} µs; after / before by pair: req/s ${median(after.map((x, i) => x.rps / before[i].rps)).toFixed(2)}, CPU ${median(after.map((x, i) => x.cpu / before[i].cpu)).toFixed(2)}`,
  );
} finally {
  for (const c of children) c.kill("SIGTERM");
  await sleep(500);
  rmSync(dir, { recursive: true, force: true });
}
