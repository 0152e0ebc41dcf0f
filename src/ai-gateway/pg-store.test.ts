import assert from "node:assert/strict";
import { test } from "node:test";
import { migrateArea } from "../core/db/pg-migrations.js";
import { Postgres } from "../core/db/postgres.js";
import { createLogger } from "../core/logger.js";
import { assertPostgresRefusals, testPostgres, unreachablePostgres } from "../core/testing/backends.js";
import { privatePostgres } from "../core/testing/services.js";
import { LogCounts } from "./logs/counts.js";
import { LogQueue, MAX_WAITING_BYTES, MAX_WAITING_LOGS } from "./logs/queue.js";
import { AI_GATEWAY_PG_MIGRATIONS } from "./pg-migrations.js";
import { PgRateLimiter } from "./proxy/pg-rate-limiter.js";
import { pgStores } from "./pg-store.js";
import { describeRateLimiter } from "./proxy/rate-limiter.contract.js";
import { describeAiGatewayStores } from "./store.contract.js";
import type { Gateway } from "./gateways/store.js";
import type { LogQuery } from "./logs/store.js";
import { A, sampleDraft, sampleLog, sampleSettings } from "./testing/sample-log.js";

const AREA = "ai_gateway";

describeAiGatewayStores("PostgreSQL", async (t) => {
  const pg = await testPostgres(t, AREA, AI_GATEWAY_PG_MIGRATIONS);
  return pg && { store: pgStores(pg), close() {} };
});

describeRateLimiter("PostgreSQL", async (t) => {
  const pg = await testPostgres(t, AREA, AI_GATEWAY_PG_MIGRATIONS);
  return pg && { store: new PgRateLimiter(pg), close() {} };
});

const gatewayLimitedTo = (limit: number, technique: "fixed" | "sliding"): Gateway => ({
  ...sampleSettings({ rate_limiting_limit: limit, rate_limiting_interval: 3600, rate_limiting_technique: technique }),
  id: "shared",
  account_id: A,
  created_at: "2001-01-01T00:00:00.000Z",
  modified_at: "2001-01-01T00:00:00.000Z",
});

test("two nodes' rate limiters (two pools) taking at once on one gateway let exactly the limit through, fixed and sliding", async (t) => {
  const pg = await testPostgres(t, AREA, AI_GATEWAY_PG_MIGRATIONS, 8);
  if (!pg) return;
  // A second node: its own pool on the same database.
  const other = new Postgres({ url: (pg.pool.options as { connectionString: string }).connectionString, poolSize: 8 });
  t.after(() => other.close());
  const nodes = [new PgRateLimiter(pg), new PgRateLimiter(other)];
  const now = Date.UTC(2030, 0, 1, 0, 30);
  for (const technique of ["fixed", "sliding"] as const) {
    const g = { ...gatewayLimitedTo(25, technique), id: `shared-${technique}` };
    // 100 takes, as many at once as the pools have connections (waiting for one longer than 2 s would be a 503).
    let issued = 0;
    let passed = 0;
    const worker = async (node: PgRateLimiter) => {
      while (issued++ < 100) if (await node.take(g, now)) passed++;
    };
    await Promise.all(Array.from({ length: 16 }, (_, i) => worker(nodes[i % 2])));
    assert.equal(passed, 25, `${technique}: exactly the limit passed, whichever node counted`);
    assert.equal(await nodes[0].take(g, now), false);
  }
  // Swept once no count reads them: an hour window is read until the end of the next one.
  assert.equal(await nodes[0].sweep(now + 2 * 3600_000 - 30 * 60_000), 0);
  assert.equal(await nodes[1].sweep(now + 2 * 3600_000), 2);
});

test("logs of one STOP_INSERTING gateway written by two nodes at once stop at the limit; counts stay exact across deletes", async (t) => {
  const pg = await testPostgres(t, AREA, AI_GATEWAY_PG_MIGRATIONS, 8);
  if (!pg) return;
  const other = new Postgres({ url: (pg.pool.options as { connectionString: string }).connectionString, poolSize: 8 });
  t.after(() => other.close());
  const [a, b] = [pgStores(pg).logs, pgStores(other).logs];
  // Small batches: they take turns on the gateway's count row, and the last must not wait past the statement timeout.
  const limited = (i: number) => sampleLog(i, { limit: 500, strategy: "STOP_INSERTING" });
  const batches = Array.from({ length: 12 }, (_, n) => Array.from({ length: 100 }, (_, i) => limited(n * 100 + i)));
  await Promise.all(batches.map((batch, n) => (n % 2 ? a : b).append(batch)));
  assert.equal(await a.count(A, "g"), 500);
  const all: LogQuery = { filter: { conditions: [] }, order: { by: "created_at", direction: "asc" } };
  assert.equal((await b.list(A, "g", { ...all, limit: 1 })).stats.total_count, 500, "the count is the table's");
  assert.equal(await a.delete(A, "g", { ...all, limit: 40 }), 40);
  assert.equal(await b.count(A, "g"), 460);
  assert.deepEqual(await b.append([limited(50_000)]), [{ account_id: A, gateway_id: "g", count: 461 }]);
});

test("PostgreSQL unreachable: the stores' errors are the core 503 naming PostgreSQL", async (t) => {
  const pg = unreachablePostgres();
  t.after(() => pg.close());
  const { gateways, logs } = pgStores(pg);
  const limiter = new PgRateLimiter(pg);
  await assertPostgresRefusals([
    () => gateways.get(A, "g"),
    () => gateways.create(A, "g", sampleSettings()),
    () => logs.append([sampleLog(1)]),
    () => logs.list(A, "g", { filter: { conditions: [] }, order: { by: "created_at", direction: "asc" } }),
    async () => limiter.take(gatewayLimitedTo(1, "fixed")),
  ]);
});

test("PostgreSQL stopped: queued logs wait in memory and are written, in order, once it is back", { timeout: 120_000 }, async (t) => {
  const server = await privatePostgres(t);
  if (!server) return;
  const pg = new Postgres({ url: server.url, poolSize: 2, connectTimeoutMs: 1000 });
  t.after(() => pg.close());
  await migrateArea(pg, AREA, AI_GATEWAY_PG_MIGRATIONS);
  const { logs } = pgStores(pg);
  const queue = new LogQueue(logs, new LogCounts(logs), createLogger({ level: "silent" }));
  queue.push(sampleDraft(1));
  await queue.flush();
  assert.equal(await logs.count(A, "g"), 1);

  server.stop();
  for (let i = 2; i <= 1500; i++) queue.push(sampleDraft(i));
  await queue.flush();
  assert.equal(queue.pending, 1499, "nothing is lost while PostgreSQL is away");
  await server.start();
  const deadline = Date.now() + 60_000;
  // Pending counts the batch being written too (CI once read the count with the last batch still on its way).
  while (queue.pending > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(queue.pending, 0, "the queue wrote them by itself");
  assert.equal(await logs.count(A, "g"), 1500);
  const listed = await logs.list(A, "g", { filter: { conditions: [] }, order: { by: "created_at", direction: "asc" }, limit: 3, offset: 1 });
  assert.deepEqual(
    listed.logs.map((l) => l.id),
    ["L00000002", "L00000003", "L00000004"],
    "in the order they were made",
  );
  await queue.close();
});

test("PostgreSQL unreachable: the logs waiting for it are bounded in number and in body bytes; what comes beyond is dropped", async () => {
  const pg = new Postgres({ url: "postgres://nobody@127.0.0.1:1/none", poolSize: 1, connectTimeoutMs: 500 });
  try {
    const { logs } = pgStores(pg);
    const silent = createLogger({ level: "silent" });
    const byCount = new LogQueue(logs, new LogCounts(logs), silent);
    for (let i = 0; i < MAX_WAITING_LOGS + 5; i++) byCount.push(sampleDraft(i));
    await byCount.flush();
    assert.equal(byCount.pending, MAX_WAITING_LOGS, "the write failed and the logs wait, up to the bound");
    await byCount.close();

    const megabyte = Buffer.alloc(1024 * 1024); // one buffer shared by every log: the bound counts bytes per log
    const fit = MAX_WAITING_BYTES / megabyte.length;
    const byBytes = new LogQueue(logs, new LogCounts(logs), silent);
    for (let i = 0; i < fit + 3; i++) byBytes.push(sampleDraft(i, { request_body: megabyte }));
    await byBytes.flush();
    assert.equal(byBytes.pending, fit);
    await byBytes.close();
  } finally {
    await pg.close();
  }
});
