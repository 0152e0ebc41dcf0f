// The edge in front of workerd, A/B: one or more builds of the platform started side by side, each serving the
// same two workers (one answering 1 KiB without a binding, one doing env.BUCKET.get of 1 KiB), measured in rounds
// that rotate the order: each script's workerd asked directly on its unix socket (the ceiling), and the same
// script through the build's edge port. Prints, per build, the medians of the rounds and edge / direct.
// Builds: the directories holding a `dist/` (default: this checkout). For an A/B, copy a built checkout's dist/
// (and a node_modules symlink) elsewhere, then: node bench/workers/edge-ab.mjs /tmp/edge-base .
// Env: BENCH_SECONDS (per case, default 3), BENCH_ROUNDS (default 3), BENCH_CLIENTS (default 1,8), ONLY (regexp
// on the worker name: plain|get), PIPE=1 (also a third path: a Node process that only copies bytes between a TCP port
// and the script's workerd socket, no HTTP parsing at all; the least any Node hop in front of workerd can cost).
import { spawn } from "node:child_process";
import { once } from "node:events";
import { loadavg } from "node:os";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { cpuOf, timedLoops } from "./loops.mjs";
import { EDGE_BENCH_WORKERS as WORKERS, scriptInfo, uploadWorker } from "./upload.mjs";
import { Pool, request } from "../../node_modules/undici/index.js";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CLIENTS = (process.env.BENCH_CLIENTS ?? "1,8").split(",").map(Number);
const ONLY = process.env.ONLY ? new RegExp(process.env.ONLY) : undefined;
const SMALL = "x".repeat(1024);

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(" ");

/** req/s and the platform's CPU µs per request of `clients` keep-alive loops for SECONDS. */
async function measure(pool, headers, clients, platformPid) {
  const once = async () => {
    const r = await pool.request({ path: "/", method: "GET", headers });
    const b = await r.body.text();
    if (r.statusCode !== 200 || b.length !== SMALL.length) throw new Error(`bad answer ${r.statusCode} ${b.slice(0, 100)}`);
  };
  let cpu0 = 0;
  const { n, secs } = await timedLoops(once, clients, SECONDS, () => (cpu0 = cpuOf(platformPid)));
  return { rps: n / secs, platformCpu: (cpuOf(platformPid) - cpu0) / n };
}

const PIPE_SOURCE = `const net = require("node:net");
const s = net.createServer({ noDelay: true }, (c) => { const u = net.connect(process.argv[1]); c.pipe(u).pipe(c); c.on("error", () => u.destroy()); u.on("error", () => c.destroy()); });
s.listen(0, "127.0.0.1", () => console.log(s.address().port));`;

/** A byte pipe process in front of a unix socket: its TCP port. */
async function startPipe(socketPath, children) {
  const child = spawn(process.execPath, ["-e", PIPE_SOURCE, socketPath], { stdio: ["ignore", "pipe", "inherit"] });
  children.push(child);
  const [line] = await once(child.stdout, "data");
  return Number(String(line).trim());
}

const builds = (process.argv.slice(2).length ? process.argv.slice(2) : ["."]).map((d) => resolve(d));
console.log(`${new Date().toISOString()} load ${load()}; ${ROUNDS} rounds of ${SECONDS} s; builds: ${builds.join(", ")}`);
const platforms = [];
const children = [];
try {
  for (const [i, dir] of builds.entries()) {
    const { startTestPlatform } = await import(pathToFileURL(`${dir}/dist/core/testing/platform.js`).href);
    const p = await startTestPlatform({ args: ["--dns-port", "0"] });
    platforms.push(p);
    const created = await p.api("POST", `/accounts/${p.accountId}/r2/buckets`, { name: "bench" });
    if (created.status !== 200) throw new Error(JSON.stringify(created.body));
    const seed = await request(`${p.apiUrl}/accounts/${p.accountId}/r2/buckets/bench/objects/small`, { method: "PUT", body: SMALL, headers: p.headers() });
    await seed.body.text();
    for (const [w, { code, bindings }] of Object.entries(WORKERS)) await uploadWorker(p, `ab-${w}`, code, bindings);
    p.label = String.fromCharCode(65 + i);
  }
  // One case per build, worker, path and client count; each round runs them all in a rotated order.
  const cases = [];
  for (const p of platforms)
    for (const w of Object.keys(WORKERS).filter((w) => !ONLY || ONLY.test(w)))
      for (const c of CLIENTS)
        for (const path of process.env.PIPE ? ["direct", "pipe", "edge"] : ["direct", "edge"]) {
          const port = new URL(p.url).port;
          const socketPath = scriptInfo(p, `ab-${w}`).socket.socketPath;
          const pipePort = path === "pipe" ? await startPipe(socketPath, children) : undefined;
          const target =
            path === "direct"
              ? () => new Pool("http://localhost", { connections: c, socketPath })
              : () => new Pool(`http://127.0.0.1:${pipePort ?? port}`, { connections: c });
          const headers = path === "edge" ? { host: `ab-${w}.workers.localhost:${port}` } : {};
          cases.push({ key: `${p.label} ${w} c=${c} ${path}`, p, target, headers, c, runs: [] });
        }
  for (let r = 0; r < ROUNDS; r++) {
    const order = cases.map((_, i) => cases[(i + r * 3) % cases.length]);
    for (const k of order) {
      const pool = k.target();
      k.runs.push(await measure(pool, k.headers, k.c, k.p.process.pid));
      await pool.close();
    }
    console.log(`round ${r + 1} done, load ${load()}`);
  }
  const byKey = new Map(cases.map((k) => [k.key, k]));
  for (const k of cases.filter((k) => !k.key.endsWith("direct"))) {
    const d = byKey.get(k.key.replace(/(edge|pipe)$/, "direct"));
    const e = median(k.runs.map((x) => x.rps));
    const dr = median(d.runs.map((x) => x.rps));
    const ratios = k.runs.map((x, i) => (x.rps / d.runs[i].rps).toFixed(2));
    console.log(
      `${k.key.padEnd(21)} direct ${dr.toFixed(0).padStart(6)}  this ${e.toFixed(0).padStart(6)}  this/direct ${(e / dr).toFixed(2)} (rounds ${ratios.join(" ")})  platform CPU µs/req: direct ${median(d.runs.map((x) => x.platformCpu)).toFixed(0)} (tail events, R2 backend), this path ${median(k.runs.map((x) => x.platformCpu)).toFixed(0)}`,
    );
  }
  console.log(`end load ${load()}`);
} finally {
  for (const c of children) c.kill();
  for (const p of platforms) await p.dispose();
}
