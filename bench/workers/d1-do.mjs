// D1 and Durable Objects benchmark: one worker that answers /d1?id=N with one D1 `SELECT` by primary key and /do by
// incrementing a SQLite-backed Durable Object counter (one object, every client on it), on this platform and on
// Miniflare 3 (`dispatchFetch`, and its own HTTP socket), sequential keep-alive and 8 concurrent clients. The cases
// take turns in rounds (the order rotating each round) so the machine's drift spreads over all of them; each case's
// median over the rounds is reported, with the ratios. Both sides keep their data on disk (Miniflare with
// d1Persist/durableObjectsPersist in a temporary directory). The ceiling row asks the script's workerd directly on its
// unix socket (no edge in front), and for D1 the binding backend is also asked alone (the call workerd's D1 API makes,
// sent straight to the platform's binding server); the CPU columns are µs per request of the platform's Node process, the script's
// workerd and the platform's other child processes (the D1 executor among them).
// Run: npm run build && (cd bench/workers && npm install && node d1-do.mjs). BENCH_SECONDS (3), BENCH_ROUNDS (3).
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { Miniflare } from "miniflare";
import { startTestPlatform } from "../../dist/core/testing/platform.js";
import { scriptInfo, uploadWorker } from "./upload.mjs";
import { Pool } from "../../node_modules/undici/index.js";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const WARMUP_MS = 300;
const ROWS = 1000;
const TICK_US = 1e6 / 100; // USER_HZ

const WORKER = `import { DurableObject } from "cloudflare:workers";
export class Counter extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS counter (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)");
  }
  increment() {
    return this.ctx.storage.sql.exec("INSERT INTO counter VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET n = n + 1 RETURNING n").one().n;
  }
}
export default {
  async fetch(req, env) {
    const url = new URL(req.url);
    if (url.pathname === "/d1") {
      const row = await env.DB.prepare("SELECT id, name FROM users WHERE id = ?").bind(Number(url.searchParams.get("id"))).first();
      return row ? Response.json(row) : new Response("missing", { status: 404 });
    }
    if (url.pathname === "/do") return new Response(String(await env.COUNTER.get(env.COUNTER.idFromName("bench")).increment()));
    return new Response("not found", { status: 404 });
  },
};`;
const SCHEMA = "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL)";
const SEED = `INSERT INTO users (id, name) WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < ${ROWS}) SELECT x, 'user-' || x FROM n`;

/** A request of `workload` and the check of its answer. */
const WORKLOADS = {
  d1: () => {
    const id = 1 + Math.floor(Math.random() * ROWS);
    return { path: `/d1?id=${id}`, ok: (status, body) => status === 200 && body === `{"id":${id},"name":"user-${id}"}` };
  },
  do: () => ({ path: "/do", ok: (status, body) => status === 200 && /^\d+$/.test(body) }),
};

const pct = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** CPU time (µs) of a process and all its threads. */
function cpuOf(pid) {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
    return (Number(f[11]) + Number(f[12])) * TICK_US;
  } catch {
    return 0;
  }
}

/** The platform's child processes other than `except` (its other workerds, the D1 executor). */
function otherChildren(parent, except) {
  const kids = [];
  for (const t of readdirSync(`/proc/${parent}/task`)) {
    try {
      kids.push(...readFileSync(`/proc/${parent}/task/${t}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number));
    } catch {
      // thread gone
    }
  }
  return kids.filter((k) => k !== except);
}

/** A client: `send(path)` answers { status, body }. */
function poolClient(origin, connections, { host, socketPath } = {}) {
  const pool = new Pool(origin, { connections, pipelining: 1, ...(socketPath ? { socketPath } : {}) });
  return {
    async send(path) {
      const r = await pool.request({ path, method: "GET", headers: host ? { host } : {} });
      return { status: r.statusCode, body: await r.body.text() };
    },
    close: () => pool.close(),
  };
}

/**
 * The D1 part of a request alone: the call workerd's D1 API makes (POST /query with the statement and its parameter,
 * the binding header workerd injects) sent straight to the platform's binding server, which plans it and runs it in
 * the database's executor process. Its answer is reshaped to the row, as the worker would return it.
 */
function d1BackendClient(backend, connections) {
  const pool = new Pool("http://localhost", { connections, pipelining: 1, socketPath: backend.socket.socketPath });
  return {
    async send(path) {
      const id = Number(new URL(path, "http://x").searchParams.get("id"));
      const r = await pool.request({
        path: "/query",
        method: "POST",
        headers: { [backend.header]: backend.value, "content-type": "application/json" },
        body: JSON.stringify({ sql: "SELECT id, name FROM users WHERE id = ?", params: [id] }),
      });
      const answer = await r.body.json();
      return { status: r.statusCode, body: JSON.stringify(answer.results?.[0]) };
    },
    close: () => pool.close(),
  };
}

/** Runs `clients` loops for SECONDS after a warm-up; req/s, latency percentiles and, with `pids`, CPU µs per request. */
async function measure(client, workload, clients, pids) {
  let stop = Date.now() + WARMUP_MS;
  const loop = async (lat) => {
    while (Date.now() < stop) {
      const { path, ok } = WORKLOADS[workload]();
      const t = process.hrtime.bigint();
      const { status, body } = await client.send(path);
      lat?.push(Number(process.hrtime.bigint() - t) / 1e6);
      if (!ok(status, body)) throw new Error(`bad answer to ${path}: ${status} ${body.slice(0, 200)}`);
    }
  };
  await Promise.all(Array.from({ length: clients }, () => loop()));
  const cpu0 = pids && Object.fromEntries(Object.entries(pids()).map(([k, list]) => [k, list.reduce((s, p) => s + cpuOf(p), 0)]));
  const lat = [];
  const start = performance.now();
  stop = Date.now() + SECONDS * 1000;
  await Promise.all(Array.from({ length: clients }, () => loop(lat)));
  const secs = (performance.now() - start) / 1000;
  const cpu = cpu0 && Object.fromEntries(Object.entries(pids()).map(([k, list]) => [k, (list.reduce((s, p) => s + cpuOf(p), 0) - cpu0[k]) / lat.length]));
  lat.sort((a, b) => a - b);
  return { rps: lat.length / secs, p50: pct(lat, 0.5), p99: pct(lat, 0.99), cpu };
}

const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");
console.log(`node ${process.version}, ${cpus().length} CPUs, ${SECONDS}s per case, ${ROUNDS} rounds, ${new Date().toISOString()}, load average ${load()}`);

const mfDir = mkdtempSync(join(tmpdir(), "bench-mf-"));
const p = await startTestPlatform({ args: ["--dns-port", "0"] });
const mf = new Miniflare({
  modules: true,
  script: WORKER,
  compatibilityDate: "2024-09-01",
  d1Databases: { DB: "bench-db" },
  durableObjects: { COUNTER: { className: "Counter", useSQLite: true } },
  d1Persist: join(mfDir, "d1"),
  durableObjectsPersist: join(mfDir, "do"),
});
const clients = [];
try {
  const db = await p.api("POST", `/accounts/${p.accountId}/d1/database`, { name: "bench" });
  if (db.status !== 200) throw new Error(JSON.stringify(db.body));
  const seeded = await p.api("POST", `/accounts/${p.accountId}/d1/database/${db.body.result.uuid}/query`, { sql: `${SCHEMA}; ${SEED}` });
  if (seeded.status !== 200) throw new Error(JSON.stringify(seeded.body));
  await uploadWorker(
    p,
    "bench-d1-do",
    WORKER,
    [
      { type: "d1", name: "DB", id: db.body.result.uuid },
      { type: "durable_object_namespace", name: "COUNTER", class_name: "Counter" },
    ],
    { migrations: { new_tag: "v1", steps: [{ new_sqlite_classes: ["Counter"] }] } },
  );
  const info = scriptInfo(p, "bench-d1-do");
  const pids = () => ({ platform: [p.process.pid], workerd: [info.pid], others: otherChildren(p.process.pid, info.pid) });
  const port = new URL(p.url).port;

  const mfUrl = await mf.ready;
  const mfDb = await mf.getD1Database("DB");
  await mfDb.prepare(SCHEMA).run();
  await mfDb.prepare(SEED).run();

  const targets = (c) => ({
    "miniflare dispatchFetch": {
      async send(path) {
        const r = await mf.dispatchFetch(`http://localhost${path}`);
        return { status: r.status, body: await r.text() };
      },
      close: () => {},
    },
    "miniflare HTTP socket": poolClient(mfUrl.origin, c),
    "edge platform": poolClient(`http://127.0.0.1:${port}`, c, { host: `bench-d1-do.workers.localhost:${port}` }),
    "ceiling: its workerd, no edge": poolClient("http://localhost", c, { socketPath: info.socket.socketPath }),
    "D1 binding backend alone": d1BackendClient(info.backend, c),
  });
  const byConcurrency = { 1: targets(1), 8: targets(8) };
  clients.push(...Object.values(byConcurrency).flatMap((t) => Object.values(t)));
  const names = Object.keys(byConcurrency[1]);
  const results = new Map(); // "workload c=N name" → measurements

  for (let round = 0; round < ROUNDS; round++) {
    console.log(`round ${round + 1}/${ROUNDS} at ${new Date().toISOString()}, load average ${load()}`);
    for (const workload of Object.keys(WORKLOADS)) {
      for (const c of [1, 8]) {
        for (let i = 0; i < names.length; i++) {
          const name = names[(i + round) % names.length];
          if (workload !== "d1" && name === "D1 binding backend alone") continue;
          const key = `${workload} c=${c} ${name}`;
          const ours = !name.startsWith("miniflare");
          const m = await measure(byConcurrency[c][name], workload, c, ours ? pids : undefined);
          if (!results.has(key)) results.set(key, []);
          results.get(key).push(m);
        }
      }
    }
  }

  const summary = {};
  for (const workload of Object.keys(WORKLOADS)) {
    for (const c of [1, 8]) {
      console.log(`\n${workload === "d1" ? "D1 SELECT by primary key" : "Durable Object counter increment"}, ${c === 1 ? "sequential" : "8 clients"}:`);
      const row = {};
      for (const name of names) {
        const ms = results.get(`${workload} c=${c} ${name}`);
        if (!ms) continue;
        const rps = ms.map((m) => m.rps);
        const mid = ms.find((m) => m.rps === median(rps));
        row[name] = mid;
        const cpu = mid.cpu
          ? `   CPU µs/req: ${Object.entries(mid.cpu)
              .map(([k, v]) => `${k} ${v.toFixed(0)}`)
              .join(", ")}`
          : "";
        console.log(
          `  ${name.padEnd(30)} ${median(rps).toFixed(0).padStart(6)} req/s (rounds ${rps.map((r) => r.toFixed(0)).join(", ")})   p50 ${mid.p50.toFixed(2)} ms   p99 ${mid.p99.toFixed(2)} ms${cpu}`,
        );
      }
      const ratio = (a, b) => (row[a].rps / row[b].rps).toFixed(2);
      console.log(
        `  platform / miniflare socket ${ratio("edge platform", "miniflare HTTP socket")}x (goal >= 3x), / dispatchFetch ${ratio("edge platform", "miniflare dispatchFetch")}x, / ceiling ${ratio("edge platform", "ceiling: its workerd, no edge")}`,
      );
      summary[`${workload} c=${c}`] = Object.fromEntries(Object.entries(row).map(([k, v]) => [k, Math.round(v.rps)]));
    }
  }
  console.log(`\nend ${new Date().toISOString()}, load average ${load()}`);
  console.log(JSON.stringify(summary));
} finally {
  await Promise.all(clients.map((c) => c.close()));
  await mf.dispose().catch(() => {});
  await p.dispose();
  rmSync(mfDir, { recursive: true, force: true });
}
