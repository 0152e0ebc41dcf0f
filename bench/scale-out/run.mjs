#!/usr/bin/env node
// Scale-out benchmark: the mix of workloads.mjs (KV get/put, R2 small-object GET/PUT, DNS record list, a worker
// reading R2) against
//   1. one embedded node (SQLite and files in its state directory),
//   2. one node on PostgreSQL 15 + Ceph RGW,
//   3. two nodes on another database and bucket of the same PostgreSQL + RGW, requests going round-robin,
// all started at once and measured interleaved (for each workload, each setup in turn, for --rounds rounds), so
// that load from elsewhere on the machine hits every setup alike; prints req/s (the median of the rounds), p50/p99,
// the CPU per request of each node and of PostgreSQL and RGW, and the ratios (PG+RGW / embedded, two nodes / one).
// Not part of the test suite.
//
//   npm run build
//   node bench/scale-out/run.mjs [--seconds 5] [--rounds 3] [--clients 16] [--value-bytes 512] [--before DIR]
//
// --before DIR adds a fourth setup, one node on PostgreSQL + RGW running the build in DIR (another checkout's
// `npm run build`: DIR/dist/bin/edgecli.js), measured in the same rounds: a before/after under the same load.
//
// --commit-settings adds two more one-node setups, each on a database of its own with a commit setting of
// PostgreSQL's set on it (ALTER DATABASE ... SET): `synchronous_commit = off` (a commit does not wait for its WAL
// fsync), and `commit_delay` / `commit_siblings` (--commit-delay µs, default 1000; --commit-siblings, default 2: a
// committing backend waits that long for others to share its fsync when that many transactions are open).
// Deployment choices with a cost: docs/reliability.md.
//
// After the per-workload tables, the issue's mix as a whole: equal shares of every workload, so a mixed request
// takes the mean of the workloads' times (1 / req/s each), and the mix's req/s is their harmonic mean.
//
// PostgreSQL and RGW are started with scripts/services (as the tests do) unless EDGE_TEST_DATABASE_URL and
// EDGE_TEST_S3_* name running ones. Everything (load generator, nodes, PostgreSQL, RGW) shares this machine's CPUs,
// so two nodes cannot show more throughput than one here: the CPU per request of each process is what projects to
// separate machines (see docs/benchmarks.md).
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { loadavg, tmpdir, cpus } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { Agent } from "undici";
import { numberOption, stringOption } from "../../scripts/lib/options.mjs";
import { newCredentials, startServe } from "../../scripts/lib/serve-process.mjs";
import { treeCpuSeconds } from "../dns/proc-stats.mjs";
import { awsEnv, createBucket, createDatabase, startObjectStore, startPostgres } from "../../dist/core/testing/services.js";
import { KEYS, prepare, send, WORKLOADS } from "./workloads.mjs";

const SECONDS = numberOption("seconds", 5);
const ROUNDS = numberOption("rounds", 3);
const CLIENTS = numberOption("clients", 16);
const VALUE_BYTES = numberOption("value-bytes", 512);
const BEFORE = stringOption("before", "");
const COMMIT_SETTINGS = process.argv.includes("--commit-settings");
const COMMIT_DELAY_US = numberOption("commit-delay", 1000);
const COMMIT_SIBLINGS = numberOption("commit-siblings", 2);

// ---- the backends -------------------------------------------------------------------------------------

async function services() {
  const started = [];
  let pg = process.env.EDGE_TEST_DATABASE_URL ? { url: process.env.EDGE_TEST_DATABASE_URL } : undefined;
  let s3 = process.env.EDGE_TEST_S3_ENDPOINT
    ? {
        endpoint: process.env.EDGE_TEST_S3_ENDPOINT,
        accessKeyId: process.env.EDGE_TEST_S3_ACCESS_KEY_ID,
        secretAccessKey: process.env.EDGE_TEST_S3_SECRET_ACCESS_KEY,
        region: "us-east-1",
      }
    : undefined;
  if (!pg) started.push((pg = await startPostgres()));
  if (!s3) started.push((s3 = await startObjectStore()));
  return { pg, s3, stop: () => started.forEach((s) => s.dispose()) };
}

/** The pids whose CPU counts as PostgreSQL's and RGW's: the postmaster (with its backends) and radosgw + OSD. */
function servicePids(pg, s3) {
  const pidOf = (file) => {
    try {
      return Number(readFileSync(file, "utf8").split("\n")[0]);
    } catch {
      return undefined;
    }
  };
  return {
    postgres: pg.dir ? pidOf(join(pg.dir, "data", "postmaster.pid")) : undefined,
    rgw: s3.dir ? [pidOf(join(s3.dir, "run", "client.rgw.a.pid")), pidOf(join(s3.dir, "run", "osd.0.pid"))].filter(Boolean) : [],
  };
}

// ---- the load -----------------------------------------------------------------------------------------

/** CLIENTS closed loops for SECONDS, round-robin over the setup's nodes; latencies in ms. */
async function drive(setup, workload) {
  const latencies = [];
  let errors = 0;
  let n = 0;
  const end = Date.now() + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (Date.now() < end) {
        const i = n++;
        const node = i % setup.nodes.length;
        const t = performance.now();
        const status = await send(workload, setup.nodes[node], setup.creds, setup.target, i, setup.value, setup.agents[node]);
        if (status !== 200) errors++;
        else latencies.push(performance.now() - t);
      }
    }),
  );
  return { latencies, errors };
}

const pct = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** One round of one workload on one setup: req/s, latencies, CPU seconds of each process. */
async function round(setup, workload) {
  const cpu0 = setup.nodes.map((n) => treeCpuSeconds(n.pid));
  const pg0 = setup.pids.postgres ? treeCpuSeconds(setup.pids.postgres) : 0;
  const rgw0 = setup.pids.rgw.reduce((s, p) => s + treeCpuSeconds(p), 0);
  const t0 = performance.now();
  const { latencies, errors } = await drive(setup, workload);
  const elapsed = (performance.now() - t0) / 1000;
  return {
    count: latencies.length,
    rps: latencies.length / elapsed,
    latencies,
    errors,
    nodeCpu: setup.nodes.map((n, i) => treeCpuSeconds(n.pid) - cpu0[i]),
    pgCpu: setup.pids.postgres ? treeCpuSeconds(setup.pids.postgres) - pg0 : 0,
    rgwCpu: setup.pids.rgw.reduce((s, p) => s + treeCpuSeconds(p), 0) - rgw0,
  };
}

/** The rounds of one workload on one setup as a row: the median req/s, latencies and CPU over all of them. */
function summarise(setup, workload, rounds) {
  const latencies = rounds.flatMap((r) => r.latencies).sort((a, b) => a - b);
  const count = latencies.length;
  const sum = (f) => rounds.reduce((s, r) => s + f(r), 0);
  return {
    setup: setup.label,
    workload: workload.name,
    rps: median(rounds.map((r) => r.rps)),
    rpsRange: [Math.min(...rounds.map((r) => r.rps)), Math.max(...rounds.map((r) => r.rps))],
    p50: pct(latencies, 0.5),
    p99: pct(latencies, 0.99),
    errors: sum((r) => r.errors),
    nodeCpuMs: setup.nodes.map((_, i) => (sum((r) => r.nodeCpu[i]) * 1000) / Math.max(1, count / setup.nodes.length)),
    pgCpuMs: (sum((r) => r.pgCpu) * 1000) / Math.max(1, count),
    rgwCpuMs: (sum((r) => r.rgwCpu) * 1000) / Math.max(1, count),
  };
}

// ---- the run ------------------------------------------------------------------------------------------

const started = new Date();
const loads = [loadavg()[0]];
const svc = await services();
const pids = servicePids(svc.pg, svc.s3);
const secretsKey = randomBytes(32).toString("base64");
const dirs = [];
const allNodes = [];
const made = [];
const startNode = async (creds, env = {}, edgecli = undefined) => {
  const stateDir = mkdtempSync(join(tmpdir(), "scale-bench-"));
  dirs.push(stateDir);
  const saved = { ...process.env };
  Object.assign(process.env, env);
  try {
    const node = await startServe({ stateDir, creds, args: ["--dns-workers", "0"], edgecli });
    allNodes.push(node);
    return node;
  } finally {
    process.env = saved;
  }
};
/**
 * A database and bucket of its own for a distributed setup, so every setup starts from the same (empty) state;
 * `settings`: PostgreSQL parameters set on that database (for the sessions its nodes open).
 */
const distributedEnv = async (settings = {}) => {
  const db = await createDatabase(svc.pg);
  if (Object.keys(settings).length > 0) {
    const admin = new pg.Client({ connectionString: svc.pg.url });
    await admin.connect();
    try {
      for (const [name, value] of Object.entries(settings)) await admin.query(`ALTER DATABASE ${db.name} SET ${name} = ${value}`);
    } finally {
      await admin.end();
    }
  }
  const bucket = await createBucket(svc.s3);
  made.push(db, bucket);
  return { EDGE_DATABASE_URL: db.url, EDGE_OBJECT_STORE_URL: bucket.url, EDGE_SECRETS_KEY: secretsKey, ...awsEnv(svc.s3) };
};
const results = [];
try {
  const setups = [];
  const setUp = async (label, nodeCount, env, setupPids, edgecli) => {
    const creds = newCredentials();
    const nodes = [];
    for (let i = 0; i < nodeCount; i++) nodes.push(await startNode(creds, env, edgecli));
    const value = randomBytes(VALUE_BYTES);
    const agents = nodes.map(() => new Agent({ connections: CLIENTS, pipelining: 1 }));
    setups.push({ label, nodes, creds, value, agents, pids: setupPids, target: await prepare(nodes, creds, value) });
  };
  await setUp("embedded", 1, {}, { rgw: [] });
  await setUp("PG+RGW, 1 node", 1, await distributedEnv(), pids);
  await setUp("PG+RGW, 2 nodes", 2, await distributedEnv(), pids);
  if (BEFORE) await setUp("PG+RGW, 1 node, before", 1, await distributedEnv(), pids, join(BEFORE, "dist", "bin", "edgecli.js"));
  if (COMMIT_SETTINGS) {
    await setUp("PG+RGW, 1 node, synchronous_commit off", 1, await distributedEnv({ synchronous_commit: "off" }), pids);
    await setUp(
      `PG+RGW, 1 node, commit_delay ${COMMIT_DELAY_US} µs`,
      1,
      await distributedEnv({ commit_delay: COMMIT_DELAY_US, commit_siblings: COMMIT_SIBLINGS }),
      pids,
    );
  }
  loads.push(loadavg()[0]);
  for (const w of WORKLOADS) {
    const rounds = new Map(setups.map((s) => [s, []]));
    // A short warm-up of each setup, then the rounds, each setup in turn.
    for (const s of setups)
      await Promise.all(
        Array.from({ length: 200 }, (_, i) => send(w, s.nodes[i % s.nodes.length], s.creds, s.target, i, s.value, s.agents[i % s.nodes.length])),
      );
    for (let r = 0; r < ROUNDS; r++) {
      for (const s of setups) {
        const one = await round(s, w);
        rounds.get(s).push(one);
        console.error(`${s.label} / ${w.name} / round ${r + 1}: ${one.rps.toFixed(0)} req/s, ${one.errors} errors, load ${loadavg()[0].toFixed(1)}`);
      }
    }
    for (const s of setups) results.push(summarise(s, w, rounds.get(s)));
    loads.push(loadavg()[0]);
  }
  for (const s of setups) for (const a of s.agents) await a.close();
} finally {
  for (const n of allNodes.splice(0)) await n.stop();
  for (const m of made) await m.drop().catch(() => {});
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  svc.stop();
}

// ---- the report ---------------------------------------------------------------------------------------

const f = (n, d = 0) => (Number.isFinite(n) ? n.toFixed(d) : "–");
console.log(
  `\n${started.toISOString()}, ${cpus().length} CPUs (${cpus()[0]?.model.trim()}), Node ${process.version}, load average (1 min) ${loads.map((l) => l.toFixed(1)).join(" → ")} (start, after set-up, after each workload); ${CLIENTS} clients, ${ROUNDS} interleaved rounds of ${SECONDS} s per workload and setup, ${VALUE_BYTES}-byte values over ${KEYS} keys\n`,
);
console.log("| setup | workload | req/s (median; min–max of rounds) | p50 ms | p99 ms | node CPU ms/req | PostgreSQL CPU ms/req | RGW CPU ms/req | errors |");
console.log("|---|---|---|---|---|---|---|---|---|");
for (const r of results) {
  console.log(
    `| ${r.setup} | ${r.workload} | ${f(r.rps)} (${f(r.rpsRange[0])}–${f(r.rpsRange[1])}) | ${f(r.p50, 1)} | ${f(r.p99, 1)} | ${r.nodeCpuMs.map((c) => f(c, 2)).join(" / ")} | ${r.setup === "embedded" ? "–" : f(r.pgCpuMs, 2)} | ${r.setup === "embedded" ? "–" : f(r.rgwCpuMs, 2)} | ${r.errors} |`,
  );
}
// Every one-node setup on PostgreSQL + RGW against the embedded node, in the same rounds.
const oneNodeSetups = [...new Set(results.map((r) => r.setup))].filter((l) => l !== "embedded" && l !== "PG+RGW, 2 nodes");
console.log(
  `\n| workload | ${oneNodeSetups.map((l) => `${l} / embedded (req/s)`).join(" | ")} | 2 nodes / 1 node (req/s) | node CPU per request, PG+RGW / embedded |`,
);
console.log(`|---|${oneNodeSetups.map(() => "---|").join("")}---|---|`);
for (const w of WORKLOADS) {
  const get = (setup) => results.find((r) => r.setup === setup && r.workload === w.name);
  const [e, one, two] = [get("embedded"), get("PG+RGW, 1 node"), get("PG+RGW, 2 nodes")];
  if (!e || !one || !two) continue;
  const cells = oneNodeSetups.map((l) => (get(l) ? `${f(get(l).rps / e.rps, 2)}×` : "–"));
  console.log(`| ${w.name} | ${cells.join(" | ")} | ${f(two.rps / one.rps, 2)}× | ${f(one.nodeCpuMs[0] / e.nodeCpuMs[0], 2)}× |`);
}

// The issue's mix: equal shares of every workload. A mixed request takes the mean of the workloads' times per
// request (1 / req/s), its CPU the mean of theirs; the goal compares the mix's req/s with the embedded node's.
const setupLabels = [...new Set(results.map((r) => r.setup))];
const mix = setupLabels.map((setup) => {
  const rows = WORKLOADS.map((w) => results.find((r) => r.setup === setup && r.workload === w.name)).filter(Boolean);
  const mean = (f) => rows.reduce((s, r) => s + f(r), 0) / rows.length;
  // nodeCpuMs is per request each node served; the nodes shared the requests equally.
  const nodeCpu = (r) => r.nodeCpuMs.reduce((a, b) => a + b, 0) / r.nodeCpuMs.length;
  return {
    setup,
    complete: rows.length === WORKLOADS.length,
    msPerRequest: mean((r) => 1000 / r.rps),
    nodeCpuMs: mean(nodeCpu),
    // Every node's CPU for a request, PostgreSQL's and RGW's: what a request costs the whole setup.
    totalCpuMs: mean((r) => nodeCpu(r) + (setup === "embedded" ? 0 : r.pgCpuMs + r.rgwCpuMs)),
  };
});
const embeddedMix = mix.find((m) => m.setup === "embedded");
console.log("\nThe issue's mix (equal shares of the workloads above):\n");
console.log("| setup | ms per mixed request (mean of 1/req/s) | mixed req/s | / embedded | node CPU ms/req | CPU ms/req of node(s) + PostgreSQL + RGW |");
console.log("|---|---|---|---|---|---|");
for (const m of mix) {
  if (!m.complete) continue;
  console.log(
    `| ${m.setup} | ${f(m.msPerRequest, 2)} | ${f(1000 / m.msPerRequest)} | ${embeddedMix ? f(embeddedMix.msPerRequest / m.msPerRequest, 2) : "–"}× | ${f(m.nodeCpuMs, 2)} | ${f(m.totalCpuMs, 2)} |`,
  );
}
