// What the AI gateway's shared rate-limit counter costs (docs/ai-gateway.md, "On PostgreSQL"): PgRateLimiter.take,
// one INSERT ... ON CONFLICT ... DO UPDATE ... RETURNING per request of a limited gateway, against the in-memory
// counter of one node. Reports per-take latency p50/p99 sequentially, and takes/s with 32 in flight on one gateway
// (every take on the same row: the worst case) and on 32 gateways.
// Usage: npm run build && node bench/gateway/rate-limit-pg.mjs   (BENCH_POSTGRES_URL=postgres://superuser@host/db to
// use a server of yours, where it creates a database of its own and drops it after; otherwise it starts a private
// PostgreSQL 15 with the test scripts). N (sequential takes, default 5000),
// DURATION_MS (per concurrent phase, 5000).
import { loadavg } from "node:os";
import { migrateArea } from "../../dist/core/db/pg-migrations.js";
import { Postgres } from "../../dist/core/db/postgres.js";
import { createDatabase, startPostgres } from "../../dist/core/testing/services.js";
import { AI_GATEWAY_PG_MIGRATIONS } from "../../dist/ai-gateway/pg-migrations.js";
import { PgRateLimiter } from "../../dist/ai-gateway/proxy/pg-rate-limiter.js";
import { MemoryRateLimiter } from "../../dist/ai-gateway/proxy/rate-limiter.js";

const N = Number(process.env.N ?? 5000);
const DURATION_MS = Number(process.env.DURATION_MS ?? 5000);
const server = process.env.BENCH_POSTGRES_URL ? { url: process.env.BENCH_POSTGRES_URL, dispose() {} } : await startPostgres();
const db = await createDatabase(server);
const pg = new Postgres({ url: db.url, poolSize: 16 });
try {
  await migrateArea(pg, "ai_gateway", AI_GATEWAY_PG_MIGRATIONS);
  const gateway = (id) => ({
    id,
    account_id: "a".repeat(32),
    modified_at: new Date().toISOString(),
    rate_limiting_limit: 1e9,
    rate_limiting_interval: 3600,
    rate_limiting_technique: "sliding",
  });
  const pct = (xs, p) => xs.sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];
  console.log(
    `machine load average at start: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`,
  );

  for (const [name, limiter] of [
    ["memory", new MemoryRateLimiter()],
    ["postgres", new PgRateLimiter(pg)],
  ]) {
    const g = gateway(`seq-${name}`);
    const times = [];
    for (let i = 0; i < N; i++) {
      const t0 = process.hrtime.bigint();
      await limiter.take(g);
      times.push(Number(process.hrtime.bigint() - t0) / 1000);
    }
    console.log(`${name.padEnd(8)} sequential: p50 ${pct(times, 0.5).toFixed(1)} µs, p99 ${pct(times, 0.99).toFixed(1)} µs per take`);
  }

  const limiter = new PgRateLimiter(pg);
  for (const [label, ids] of [
    ["one gateway (one row)", Array.from({ length: 32 }, () => "hot")],
    ["32 gateways", Array.from({ length: 32 }, (_, i) => `g${i}`)],
  ]) {
    const gateways = ids.map(gateway);
    let done = 0;
    const end = Date.now() + DURATION_MS;
    await Promise.all(
      gateways.map(async (g) => {
        while (Date.now() < end) {
          await limiter.take(g);
          done++;
        }
      }),
    );
    console.log(`postgres 32 in flight, ${label}: ${Math.round(done / (DURATION_MS / 1000))} takes/s`);
  }
  console.log(
    `machine load average at end: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`,
  );
} finally {
  await pg.close();
  await db.drop();
  server.dispose();
}
