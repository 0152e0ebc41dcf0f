#!/usr/bin/env node
// What read-your-writes across nodes costs an API read (docs/dns.md "On PostgreSQL (several nodes)"): a request that
// names a zone first waits at the bus's barrier (a marker notice through PostgreSQL and back). Two parts, one run:
//   1. the barrier alone (PostgresBus on a fresh database): sequential calls, then 100 at once;
//   2. GET of one DNS record through the v4 API, answered from memory, on a node on SQLite (no barrier: one node)
//      and on a node on PostgreSQL (the barrier on every such read), side by side: sequential, then 16 clients.
// Not part of the test suite.
//
//   npm run build
//   node bench/scale-out/barrier.mjs [--requests 1000] [--clients 16]
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, request } from "undici";
import { numberOption } from "../../scripts/lib/options.mjs";
import { newCredentials, startServe } from "../../scripts/lib/serve-process.mjs";
import { PostgresBus } from "../../dist/core/cluster/bus.js";
import { Postgres } from "../../dist/core/db/postgres.js";
import { createDatabase, startPostgres } from "../../dist/core/testing/services.js";

const REQUESTS = numberOption("requests", 1000);
const CLIENTS = numberOption("clients", 16);

const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
const ms = (n) => `${n.toFixed(3)} ms`;
const summary = (times) => {
  const sorted = [...times].sort((a, b) => a - b);
  return { p50: quantile(sorted, 0.5), p90: quantile(sorted, 0.9), p99: quantile(sorted, 0.99) };
};
const now = () => Number(process.hrtime.bigint()) / 1e6;

const pgServer = await startPostgres();
const dirs = [];
const nodes = [];
try {
  console.log(
    `# barrier cost, ${new Date().toISOString()}, load ${loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")}`,
  );

  // 1. The barrier alone.
  const db = await createDatabase(pgServer);
  const pool = new Postgres({ url: db.url, poolSize: 4 });
  const bus = new PostgresBus(pool, { url: db.url, nodeId: "bench" });
  await bus.start();
  for (let i = 0; i < 50; i++) await bus.barrier();
  const alone = [];
  for (let i = 0; i < REQUESTS; i++) {
    const t = now();
    await bus.barrier();
    alone.push(now() - t);
  }
  const s = summary(alone);
  console.log(`barrier, sequential (${REQUESTS}): p50 ${ms(s.p50)}, p90 ${ms(s.p90)}, p99 ${ms(s.p99)}`);
  const rounds = [];
  for (let r = 0; r < 20; r++) {
    const t = now();
    await Promise.all(Array.from({ length: 100 }, () => bus.barrier()));
    rounds.push(now() - t);
  }
  const r = summary(rounds);
  console.log(`barrier, 100 at once (20 rounds): p50 ${ms(r.p50)}, p90 ${ms(r.p90)}`);
  await bus.close();
  await pool.close();

  // 2. An API read answered from memory, on SQLite and on PostgreSQL.
  const nodeDb = await createDatabase(pgServer);
  const start = async (args) => {
    const stateDir = mkdtempSync(join(tmpdir(), "barrier-bench-"));
    dirs.push(stateDir);
    const creds = newCredentials();
    const node = await startServe({ stateDir, creds, args: ["--dns-workers", "0", ...args] });
    nodes.push(node);
    return { ...node, accountId: creds.accountId };
  };
  process.env.EDGE_SECRETS_KEY = Buffer.alloc(32, 7).toString("base64");
  const sqlite = await start([]);
  const postgres = await start(["--database-url", nodeDb.url]);
  const targets = [];
  for (const [name, node] of [
    ["sqlite", sqlite],
    ["postgresql", postgres],
  ]) {
    const zone = await node.api("POST", "/zones", { name: `barrier-${name}.example`, account: { id: node.accountId } });
    const zoneId = zone.body.result.id;
    const record = await node.api("POST", `/zones/${zoneId}/dns_records`, { type: "TXT", name: "b", content: "x" });
    targets.push({ name, node, path: `/zones/${zoneId}/dns_records/${record.body.result.id}` });
  }
  const agent = new Agent({ connections: CLIENTS, pipelining: 1 });
  const get = async (t) => {
    const res = await request(`${t.node.apiUrl}${t.path}`, { headers: t.node.headers(), dispatcher: agent });
    await res.body.dump();
    if (res.statusCode !== 200) throw new Error(`${t.name}: ${res.statusCode}`);
  };
  const results = new Map(targets.map((t) => [t.name, { sequential: [], rates: [] }]));
  // Alternating rounds, so a change in the machine's load falls on both.
  for (let round = 0; round < 3; round++) {
    for (const t of round % 2 === 0 ? targets : [...targets].reverse()) {
      for (let i = 0; i < 100; i++) await get(t);
      const times = [];
      for (let i = 0; i < REQUESTS; i++) {
        const t0 = now();
        await get(t);
        times.push(now() - t0);
      }
      results.get(t.name).sequential.push(...times);
      let left = REQUESTS * 4;
      const t0 = now();
      await Promise.all(
        Array.from({ length: CLIENTS }, async () => {
          while (left-- > 0) await get(t);
        }),
      );
      results.get(t.name).rates.push((REQUESTS * 4) / ((now() - t0) / 1000));
    }
  }
  for (const [name, { sequential, rates }] of results) {
    const q = summary(sequential);
    const rate = [...rates].sort((a, b) => a - b)[1];
    console.log(
      `GET a record, ${name}: sequential p50 ${ms(q.p50)}, p90 ${ms(q.p90)}, p99 ${ms(q.p99)}; ${CLIENTS} clients ${rate.toFixed(0)} req/s (median of 3)`,
    );
  }
  const a = summary(results.get("sqlite").sequential);
  const b = summary(results.get("postgresql").sequential);
  const rateOf = (name) => [...results.get(name).rates].sort((x, y) => x - y)[1];
  console.log(
    `postgresql - sqlite: p50 +${ms(b.p50 - a.p50)}, p99 +${ms(b.p99 - a.p99)}; rate postgresql / sqlite ${(rateOf("postgresql") / rateOf("sqlite")).toFixed(2)}`,
  );
  await agent.close();
} finally {
  for (const node of nodes) await node.stop();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  pgServer.stop();
}
