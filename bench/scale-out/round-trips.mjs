#!/usr/bin/env node
// What one request of the scale-out mix costs a node on PostgreSQL + Ceph RGW: the PostgreSQL statements it runs
// (pg_stat_statements, each a round trip, with the plans each statement made and their time: a statement planned at
// every call shows as many plans as calls), the WAL it wrote (fsyncs, records, bytes), the S3 requests it sends
// (counted by an HTTP proxy in front of RGW), and the CPU per request of the node (with its workerd), PostgreSQL and
// RGW (/proc counts in 10 ms ticks: 400 requests resolve 0.025 ms a request). With --cpu-prof, the node also writes a
// V8 CPU profile per workload, summarised by package. Not part of the test suite.
//
//   npm run build
//   node bench/scale-out/round-trips.mjs [--requests 400] [--clients 8] [--cpu-prof DIR] [--before DIR]
//
// --before DIR measures the build of another checkout instead (DIR/dist/bin/edgecli.js), for a before/after.
// --pg-settings "synchronous_commit=off" (or "commit_delay=1000,commit_siblings=2") sets PostgreSQL parameters on
// the bench's database (ALTER DATABASE ... SET) before the node connects: what they save per request.
//
// Starts its own PostgreSQL (with pg_stat_statements loaded) and RGW through scripts/services.
import { appendFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer, request as httpRequest } from "node:http";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { Agent } from "undici";
import { numberOption, stringOption } from "../../scripts/lib/options.mjs";
import { newCredentials, startServe } from "../../scripts/lib/serve-process.mjs";
import { treeCpuSeconds } from "../dns/proc-stats.mjs";
import { awsEnv, createBucket, createDatabase, startObjectStore, startPostgres } from "../../dist/core/testing/services.js";
import { prepare, send, WORKLOADS } from "./workloads.mjs";

const REQUESTS = numberOption("requests", 400);
const CLIENTS = numberOption("clients", 8);
const PROFILE_DIR = stringOption("cpu-prof", "");
const BEFORE = stringOption("before", "");
/**
 * How long a session's statistics (pg_stat_wal's counters among them) may wait before PostgreSQL 15 reports them: a
 * session reports at most once a second, and one that then goes idle reports what is pending 10 s later
 * (PGSTAT_IDLE_INTERVAL). Waiting this long before resetting and before reading keeps each workload's WAL in its own row.
 */
const STATS_FLUSH_MS = 11_000;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const PG_SETTINGS = stringOption("pg-settings", "")
  .split(",")
  .filter(Boolean)
  .map((pair) => {
    const m = /^([a-z_]+)=([\w.]+)$/.exec(pair.trim());
    if (!m) throw new Error(`--pg-settings: "${pair}" is not name=value`);
    return [m[1], m[2]];
  });

/** An HTTP proxy in front of RGW that counts requests by method (the signature covers the Host header, kept as sent). */
async function countingProxy(target) {
  const upstream = new URL(target);
  const counts = new Map();
  const server = createServer((req, res) => {
    counts.set(req.method, (counts.get(req.method) ?? 0) + 1);
    const out = httpRequest({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers }, (up) => {
      res.writeHead(up.statusCode, up.headers);
      up.pipe(res);
    });
    out.on("error", () => res.destroy());
    req.pipe(out);
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${server.address().port}`, counts, close: () => server.close() };
}

function pidOf(file) {
  try {
    return Number(readFileSync(file, "utf8").split("\n")[0]);
  } catch {
    return undefined;
  }
}

/** Self time of a V8 CPU profile by where the code lives: a package of node_modules, an area of dist/, node itself. */
function summariseProfile(file) {
  const prof = JSON.parse(readFileSync(file, "utf8"));
  const byId = new Map(prof.nodes.map((n) => [n.id, n]));
  const self = new Map();
  const dt = (prof.endTime - prof.startTime) / Math.max(1, prof.samples.length);
  for (const id of prof.samples) {
    const { url, functionName } = byId.get(id).callFrame;
    let where;
    if (!url) where = functionName.startsWith("(") ? functionName : `(native) ${functionName}`;
    else if (url.includes("node_modules/")) {
      const parts = url.split("node_modules/").pop().split("/");
      where = parts[0].startsWith("@") ? `${parts[0]}/${parts[1]}` : parts[0];
    } else if (url.includes("/dist/")) where = `edge ${url.split("/dist/").pop().split("/").slice(0, 2).join("/")}`;
    else if (url.startsWith("node:")) where = url.split("/")[0].replace(/^node:internal.*/, "node:internal");
    else where = url;
    self.set(where, (self.get(where) ?? 0) + dt);
  }
  // Shares of the time the node was busy (idle time left out).
  const total = [...self.entries()].filter(([w]) => w !== "(idle)").reduce((a, [, us]) => a + us, 0);
  return [...self.entries()]
    .filter(([w]) => w !== "(idle)")
    .sort((a, b) => b[1] - a[1])
    .slice(0, 12)
    .map(([w, us]) => `${w} ${((100 * us) / total).toFixed(1)}%`)
    .join(", ");
}

const pgServer = await startPostgres();
const s3Server = await startObjectStore();
const dirs = [];
let node;
try {
  // pg_stat_statements must be loaded at start: restart the server with it.
  pgServer.stop();
  appendFileSync(
    join(pgServer.dir, "data", "postgresql.conf"),
    "\nshared_preload_libraries = 'pg_stat_statements'\npg_stat_statements.track = all\npg_stat_statements.track_planning = on\ntrack_wal_io_timing = on\n",
  );
  await pgServer.start();
  const db = await createDatabase(pgServer);
  const bucket = await createBucket(s3Server);
  const proxy = await countingProxy(s3Server.endpoint);
  const admin = new pg.Client({ connectionString: db.url });
  await admin.connect();
  await admin.query("CREATE EXTENSION pg_stat_statements");
  for (const [name, value] of PG_SETTINGS) await admin.query(`ALTER DATABASE ${db.name} SET ${name} = '${value}'`);
  const { rows: dbRows } = await admin.query("SELECT oid FROM pg_database WHERE datname = current_database()");
  const dbid = dbRows[0].oid;
  const pgPid = pidOf(join(pgServer.dir, "data", "postmaster.pid"));
  const rgwPids = [pidOf(join(s3Server.dir, "run", "client.rgw.a.pid")), pidOf(join(s3Server.dir, "run", "osd.0.pid"))].filter(Boolean);
  const objectStoreUrl = `s3://${bucket.name}?endpoint=${encodeURIComponent(proxy.url)}&region=${s3Server.region}`;
  Object.assign(process.env, {
    EDGE_DATABASE_URL: db.url,
    EDGE_OBJECT_STORE_URL: objectStoreUrl,
    EDGE_SECRETS_KEY: Buffer.alloc(32, 7).toString("base64"),
    ...awsEnv(s3Server),
  });
  const stateDir = mkdtempSync(join(tmpdir(), "scale-rt-"));
  dirs.push(stateDir);
  const creds = newCredentials();
  if (PROFILE_DIR) mkdirSync(PROFILE_DIR, { recursive: true });
  const start = (profileName) =>
    startServe({
      stateDir,
      creds,
      args: ["--dns-workers", "0"],
      edgecli: BEFORE ? join(BEFORE, "dist", "bin", "edgecli.js") : undefined,
      nodeArgs: profileName ? ["--cpu-prof", "--cpu-prof-dir", PROFILE_DIR, "--cpu-prof-name", `${profileName}.cpuprofile`] : [],
    });
  node = await start();
  const value = Buffer.alloc(512, "v");
  const target = await prepare([node], creds, value);
  const agent = new Agent({ connections: CLIENTS, pipelining: 1 });

  console.log(
    `\n${new Date().toISOString()}, load average ${loadavg()[0].toFixed(1)}; ${REQUESTS} requests per workload, ${CLIENTS} clients, 512-byte values${PG_SETTINGS.length ? `; ${PG_SETTINGS.map(([n, v]) => `${n} = ${v}`).join(", ")} on the database` : ""}\n`,
  );
  const table = [];
  for (const [w_i, w] of WORKLOADS.entries()) {
    const profileName = PROFILE_DIR ? `w${w_i}` : "";
    if (profileName) {
      await node.stop();
      node = await start(profileName);
    }
    // Warm up (caches, prepared statements, connections), then count from zero.
    for (let i = 0; i < 400; i++) await send(w, node, creds, target, i, value, agent);
    // The pool's sessions report their WAL counters up to 10 s late: without this wait the warm-up's (or the workload
    // before's) WAL would be counted in this workload.
    await sleep(STATS_FLUSH_MS);
    await admin.query("SELECT pg_stat_statements_reset()");
    await admin.query("SELECT pg_stat_reset_shared('wal')");
    proxy.counts.clear();
    const cpu0 = [treeCpuSeconds(node.pid), treeCpuSeconds(pgPid), rgwPids.reduce((s, p) => s + treeCpuSeconds(p), 0)];
    let next = 0;
    let errors = 0;
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        for (let i; (i = next++) < REQUESTS;) if ((await send(w, node, creds, target, i, value, agent)) !== 200) errors++;
      }),
    );
    const cpu1 = [treeCpuSeconds(node.pid), treeCpuSeconds(pgPid), rgwPids.reduce((s, p) => s + treeCpuSeconds(p), 0)];
    const { rows } = await admin.query(
      `SELECT calls, plans, total_plan_time, query, toplevel FROM pg_stat_statements WHERE dbid = $1 AND query NOT LIKE '%pg_stat_statements%' AND query NOT LIKE 'LISTEN%' ORDER BY toplevel DESC, calls DESC`,
      [dbid],
    );
    // A statement the node sent is a round trip; those a database function ran inside it are not.
    // Each commit that wrote waits for its WAL to reach the disk (fsync): the part of a write no client work removes.
    // pg_stat_statements counts at once (read before the wait, which the node's periodic statements would add to);
    // pg_stat_wal gets the sessions' counters up to 10 s late.
    await sleep(STATS_FLUSH_MS);
    const { rows: wal } = await admin.query(
      "SELECT wal_sync::float8 AS syncs, wal_sync_time::float8 AS ms, wal_records::float8 AS records, wal_bytes::float8 AS bytes FROM pg_stat_wal",
    );
    const statements = rows.filter((r) => r.toplevel).reduce((s, r) => s + Number(r.calls), 0);
    const nested = rows.filter((r) => !r.toplevel).reduce((s, r) => s + Number(r.calls), 0);
    const s3 = [...proxy.counts.entries()].map(([m, n]) => `${m} ${(n / REQUESTS).toFixed(2)}`).join(", ") || "none";
    const perReq = (i) => ((cpu1[i] - cpu0[i]) * 1000) / REQUESTS;
    table.push({
      w: w.name,
      statements: statements / REQUESTS,
      nested: nested / REQUESTS,
      walSyncs: wal[0].syncs / REQUESTS,
      walSyncMs: wal[0].ms / REQUESTS,
      walRecords: wal[0].records / REQUESTS,
      walBytes: wal[0].bytes / REQUESTS,
      s3,
      node: perReq(0),
      pg: perReq(1),
      rgw: perReq(2),
      errors,
    });
    console.error(`${w.name}: ${(statements / REQUESTS).toFixed(2)} round trips/request, S3 ${s3}, ${errors} errors`);
    // Calls, then plans made (a statement whose plan is kept is planned ~once a session; one planned at every call
    // shows as many plans as calls) and their time, per request.
    for (const r of rows.filter((r) => Number(r.calls) >= REQUESTS / 20)) {
      const plans = `${(Number(r.plans) / REQUESTS).toFixed(2)} plans ${((1000 * Number(r.total_plan_time)) / REQUESTS).toFixed(1)} µs`;
      console.error(
        `   ${(Number(r.calls) / REQUESTS).toFixed(2)} ${r.toplevel ? "sent  " : "inside"} (${plans}) ${r.query.replace(/\s+/g, " ").slice(0, 150)}`,
      );
    }
    if (profileName) {
      await node.stop();
      node = await start();
      const file = readdirSync(PROFILE_DIR).find((f) => f === `${profileName}.cpuprofile`);
      if (file) console.error(`   profile: ${summariseProfile(join(PROFILE_DIR, file))}`);
    }
  }
  await agent.close();
  await admin.end();
  console.log(
    "| workload | PostgreSQL round trips / request (statements run inside them) | WAL fsyncs / request (their ms per request) | WAL records / request (bytes) | S3 requests / request | node CPU ms/req | PostgreSQL CPU ms/req | RGW CPU ms/req | errors |",
  );
  console.log("|---|---|---|---|---|---|---|---|---|");
  for (const r of table) {
    console.log(
      `| ${r.w} | ${r.statements.toFixed(2)}${r.nested ? ` (${r.nested.toFixed(2)})` : ""} | ${r.walSyncs.toFixed(2)} (${r.walSyncMs.toFixed(2)}) | ${r.walRecords.toFixed(2)} (${r.walBytes.toFixed(0)}) | ${r.s3} | ${r.node.toFixed(2)} | ${r.pg.toFixed(2)} | ${r.rgw.toFixed(2)} | ${r.errors} |`,
    );
  }
  await node.stop();
  node = undefined;
  proxy.close();
  await db.drop().catch(() => {});
  await bucket.drop().catch(() => {});
} finally {
  await node?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  pgServer.dispose();
  s3Server.dispose();
}
