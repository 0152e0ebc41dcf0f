#!/usr/bin/env node
// Scale-out benchmark: KV reads and writes and R2 small-object PUT and GET through the v4 API, against
//   1. one embedded node (SQLite and files in its state directory),
//   2. one node on PostgreSQL 15 + Ceph RGW,
//   3. two nodes on the same PostgreSQL + RGW, requests going round-robin,
// in one run; prints req/s, p50/p99, the CPU per request of each node and of PostgreSQL and RGW, and the ratios
// (PG+RGW / embedded, two nodes / one). Not part of the test suite.
//
//   npm run build
//   node bench/scale-out/run.mjs [--seconds 8] [--clients 16] [--value-bytes 512]
//
// PostgreSQL and RGW are started with scripts/services (as the tests do) unless EDGE_TEST_DATABASE_URL and
// EDGE_TEST_S3_* name running ones. Everything (load generator, nodes, PostgreSQL, RGW) shares this machine's CPUs,
// so two nodes cannot show more throughput than one here: the CPU per request of each process is what projects to
// separate machines (see docs/benchmarks.md).
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { loadavg, tmpdir, cpus } from "node:os";
import { join } from "node:path";
import { Agent, request } from "undici";
import { numberOption } from "../../scripts/lib/options.mjs";
import { newCredentials, startServe } from "../../scripts/lib/serve-process.mjs";
import { treeCpuSeconds } from "../dns/proc-stats.mjs";
import { awsEnv, createBucket, createDatabase, startObjectStore, startPostgres } from "../../dist/core/testing/services.js";

const SECONDS = numberOption("seconds", 8);
const CLIENTS = numberOption("clients", 16);
const VALUE_BYTES = numberOption("value-bytes", 512);
const KEYS = 200;

const WORKLOADS = [
  { name: "KV read", kind: "kv", method: "GET" },
  { name: "KV write", kind: "kv", method: "PUT" },
  { name: "R2 GET (small)", kind: "r2", method: "GET" },
  { name: "R2 PUT (small)", kind: "r2", method: "PUT" },
];

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

async function setUp(node, creds) {
  const ns = await node.api("POST", `/accounts/${creds.accountId}/storage/kv/namespaces`, { title: "bench" });
  const bucket = await node.api("POST", `/accounts/${creds.accountId}/r2/buckets`, { name: "bench" });
  if (ns.status !== 200 || bucket.status !== 200) throw new Error(`set-up failed: ${JSON.stringify([ns.body, bucket.body])}`);
  return { namespaceId: ns.body.result.id };
}

function path(creds, target, kind, key) {
  return kind === "kv"
    ? `/client/v4/accounts/${creds.accountId}/storage/kv/namespaces/${target.namespaceId}/values/${key}`
    : `/client/v4/accounts/${creds.accountId}/r2/buckets/bench/objects/${key}`;
}

/** CLIENTS closed loops for SECONDS, round-robin over `nodes`; latencies in ms. */
async function drive(nodes, agents, creds, target, workload, value) {
  const latencies = [];
  let errors = 0;
  let n = 0;
  const end = Date.now() + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (Date.now() < end) {
        const i = n++;
        const node = i % nodes.length;
        const key = `k${i % KEYS}`;
        const t = performance.now();
        const res = await request(nodes[node].url + path(creds, target, workload.kind, key), {
          method: workload.method,
          dispatcher: agents[node],
          headers: nodes[node].headers(workload.method === "PUT" ? { "content-type": "application/octet-stream" } : {}),
          body: workload.method === "PUT" ? value : undefined,
        });
        await res.body.arrayBuffer();
        if (res.statusCode !== 200) errors++;
        else latencies.push(performance.now() - t);
      }
    }),
  );
  return { latencies, errors };
}

const pct = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;

async function measure(label, nodes, creds, pids) {
  const agents = nodes.map(() => new Agent({ connections: CLIENTS, pipelining: 1 }));
  const target = await setUp(nodes[0], creds);
  const value = randomBytes(VALUE_BYTES);
  // Every key the reads ask for exists.
  for (let i = 0; i < KEYS; i++) {
    for (const kind of ["kv", "r2"]) {
      const res = await request(nodes[0].url + path(creds, target, kind, `k${i}`), {
        method: "PUT",
        dispatcher: agents[0],
        headers: nodes[0].headers({ "content-type": "application/octet-stream" }),
        body: value,
      });
      await res.body.arrayBuffer();
    }
  }
  const rows = [];
  for (const w of WORKLOADS) {
    const cpu0 = nodes.map((n) => treeCpuSeconds(n.pid));
    const pg0 = pids.postgres ? treeCpuSeconds(pids.postgres) : 0;
    const rgw0 = pids.rgw.reduce((s, p) => s + treeCpuSeconds(p), 0);
    const t0 = performance.now();
    const { latencies, errors } = await drive(nodes, agents, creds, target, w, value);
    const elapsed = (performance.now() - t0) / 1000;
    const cpu = nodes.map((n, i) => treeCpuSeconds(n.pid) - cpu0[i]);
    const pgCpu = pids.postgres ? treeCpuSeconds(pids.postgres) - pg0 : 0;
    const rgwCpu = pids.rgw.reduce((s, p) => s + treeCpuSeconds(p), 0) - rgw0;
    latencies.sort((a, b) => a - b);
    const count = latencies.length;
    rows.push({
      setup: label,
      workload: w.name,
      rps: count / elapsed,
      p50: pct(latencies, 0.5),
      p99: pct(latencies, 0.99),
      errors,
      nodeCpuMs: cpu.map((c) => (c * 1000) / Math.max(1, count / nodes.length)),
      pgCpuMs: (pgCpu * 1000) / Math.max(1, count),
      rgwCpuMs: (rgwCpu * 1000) / Math.max(1, count),
    });
    console.error(`${label} / ${w.name}: ${(count / elapsed).toFixed(0)} req/s, ${errors} errors`);
  }
  for (const a of agents) await a.close();
  return rows;
}

// ---- the run ------------------------------------------------------------------------------------------

const started = new Date();
const load = loadavg()[0];
const svc = await services();
const pids = servicePids(svc.pg, svc.s3);
const secretsKey = randomBytes(32).toString("base64");
const dirs = [];
const nodes = [];
const startNode = async (creds, env = {}) => {
  const stateDir = mkdtempSync(join(tmpdir(), "scale-bench-"));
  dirs.push(stateDir);
  Object.assign(process.env, env);
  const node = await startServe({ stateDir, creds, args: ["--dns-workers", "0"] });
  nodes.push(node);
  return node;
};
const stopAll = async () => {
  for (const n of nodes.splice(0)) await n.stop();
};
const results = [];
try {
  const embeddedCreds = newCredentials();
  results.push(...(await measure("embedded", [await startNode(embeddedCreds)], embeddedCreds, { rgw: [] })));
  await stopAll();

  const db = await createDatabase(svc.pg);
  const bucket = await createBucket(svc.s3);
  const env = { EDGE_DATABASE_URL: db.url, EDGE_OBJECT_STORE_URL: bucket.url, EDGE_SECRETS_KEY: secretsKey, ...awsEnv(svc.s3) };
  const creds = newCredentials();
  const first = await startNode(creds, env);
  results.push(...(await measure("PG+RGW, 1 node", [first], creds, pids)));
  await stopAll();
  // A fresh database and bucket for the two-node round, so both setups start from the same (empty) state.
  const db2 = await createDatabase(svc.pg);
  const bucket2 = await createBucket(svc.s3);
  const env2 = { ...env, EDGE_DATABASE_URL: db2.url, EDGE_OBJECT_STORE_URL: bucket2.url };
  const creds2 = newCredentials();
  const two = [await startNode(creds2, env2), await startNode(creds2, env2)];
  results.push(...(await measure("PG+RGW, 2 nodes", two, creds2, pids)));
  await stopAll();
  for (const made of [db, bucket, db2, bucket2]) await made.drop().catch(() => {});
} finally {
  await stopAll();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  svc.stop();
}

// ---- the report ---------------------------------------------------------------------------------------

const f = (n, d = 0) => (Number.isFinite(n) ? n.toFixed(d) : "–");
console.log(
  `\n${started.toISOString()}, ${cpus().length} CPUs (${cpus()[0]?.model.trim()}), Node ${process.version}, load average ${load.toFixed(1)} before, ${loadavg()[0].toFixed(1)} after; ${CLIENTS} clients, ${SECONDS} s per workload, ${VALUE_BYTES}-byte values over ${KEYS} keys\n`,
);
console.log("| setup | workload | req/s | p50 ms | p99 ms | node CPU ms/req | PostgreSQL CPU ms/req | RGW CPU ms/req | errors |");
console.log("|---|---|---|---|---|---|---|---|---|");
for (const r of results) {
  console.log(
    `| ${r.setup} | ${r.workload} | ${f(r.rps)} | ${f(r.p50, 1)} | ${f(r.p99, 1)} | ${r.nodeCpuMs.map((c) => f(c, 2)).join(" / ")} | ${r.setup === "embedded" ? "–" : f(r.pgCpuMs, 2)} | ${r.setup === "embedded" ? "–" : f(r.rgwCpuMs, 2)} | ${r.errors} |`,
  );
}
console.log("\n| workload | PG+RGW 1 node / embedded (req/s) | 2 nodes / 1 node (req/s) | node CPU per request, PG+RGW / embedded |");
console.log("|---|---|---|---|");
for (const w of WORKLOADS) {
  const get = (setup) => results.find((r) => r.setup === setup && r.workload === w.name);
  const [e, one, two] = [get("embedded"), get("PG+RGW, 1 node"), get("PG+RGW, 2 nodes")];
  console.log(`| ${w.name} | ${f(one.rps / e.rps, 2)}× | ${f(two.rps / one.rps, 2)}× | ${f(one.nodeCpuMs[0] / e.nodeCpuMs[0], 2)}× |`);
}
