import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";
import { Postgres } from "../db/postgres.js";
import { newTestCredentials, startTestPlatform, type TestPlatform } from "../testing/platform.js";
import { awsEnv, testBucket, testDatabase } from "../testing/services.js";
import { assertPromtoolAccepts, freeMetricsPort, sample, scrape, scrapeUntil } from "../testing/metrics.js";

test("distributed mode: each node's PostgreSQL pool, the bus's delay from publish to receipt and its reconnections, in /metrics", async (t) => {
  const db = await testDatabase(t);
  const bucket = db && (await testBucket(t));
  if (!db || !bucket) return;
  const credentials = newTestCredentials();
  const env = {
    EDGE_DATABASE_URL: db.url,
    EDGE_OBJECT_STORE_URL: bucket.url,
    EDGE_SECRETS_KEY: randomBytes(32).toString("base64"),
    ...awsEnv(bucket.server),
  };
  const nodes: { p: TestPlatform; url: string }[] = [];
  t.after(() => Promise.all(nodes.map((n) => n.p.dispose())));
  for (let i = 0; i < 2; i++) {
    const port = await freeMetricsPort();
    nodes.push({
      p: await startTestPlatform({ env, credentials, args: ["--dns-port", "0", "--metrics-port", String(port)] }),
      url: `http://127.0.0.1:${port}/metrics`,
    });
  }
  const [a, b] = nodes;
  // A zone made through node a: node b hears of it on the bus.
  const zone = await a.p.api("POST", "/zones", { name: "metrics-cluster.example", account: { id: a.p.accountId } });
  assert.equal(zone.status, 200, JSON.stringify(zone.body));
  const lagCount = (text: string) => sample(text, "edgeplatform_bus_notice_lag_seconds_count", 'area="dns"') ?? 0;
  let text = await scrapeUntil(b.url, "node b to receive the zone's notice", (s) => lagCount(s) >= 1);
  assert.ok((sample(text, "edgeplatform_bus_notice_lag_seconds_sum", 'area="dns"') ?? -1) >= 0);
  assert.ok((sample(text, "edgeplatform_postgres_pool_total_connections") ?? 0) >= 1, "the pool holds connections");
  assert.ok(sample(text, "edgeplatform_postgres_pool_idle_connections") !== undefined);
  assert.equal(sample(text, "edgeplatform_postgres_pool_waiting_queries"), 0);
  assert.equal(sample(text, "edgeplatform_bus_reconnects_total"), 0);

  // Only this database's bus connections are dropped (the server is shared with other test files' nodes).
  const admin = new Postgres({ url: db.url, poolSize: 1 });
  t.after(() => admin.close());
  const dropped = await admin.execute(
    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE 'edge-bus %' AND datname = current_database()",
  );
  assert.equal(dropped, 2);
  for (const n of nodes) await scrapeUntil(n.url, "the bus to reconnect", (s) => sample(s, "edgeplatform_bus_reconnects_total") === 1);
  text = await scrape(a.url);
  await assertPromtoolAccepts(t, text);
});
