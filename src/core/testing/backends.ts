import assert from "node:assert/strict";
import type { TestContext } from "node:test";
import { dependencyRefusal } from "../errors/dependency.js";
import { migrateArea, type PgMigration } from "../db/pg-migrations.js";
import { Postgres } from "../db/postgres.js";
import { PostgresBus } from "../cluster/bus.js";
import { S3ContentStore } from "../content/s3-store.js";
import { s3ClientConfig, testBucket, testDatabase, type TestBucket, type TestDatabase } from "./services.js";

/**
 * The distributed backends for one test, on the run's real servers (core/testing/services.ts): each a fresh
 * database or bucket, dropped after the test. Undefined when the server is not available and the test was skipped.
 */

/** A pool on a fresh database with `area`'s migrations applied (closed after the test). */
export async function testPostgres(t: TestContext, area: string, migrations: readonly PgMigration[], poolSize = 4): Promise<Postgres | undefined> {
  const db = await testDatabase(t);
  if (!db) return undefined;
  const pg = new Postgres({ url: db.url, poolSize });
  // In whichever order this and the drop (WITH FORCE) run, the pool ends without leaving anything behind.
  t.after(() => pg.close());
  await migrateArea(pg, area, migrations);
  return pg;
}

/** A fresh database and bucket for a test of whole nodes; undefined when either is missing (the test was skipped). */
export async function testDatabaseAndBucket(t: TestContext): Promise<{ db: TestDatabase; bucket: TestBucket } | undefined> {
  const db = await testDatabase(t);
  const bucket = db && (await testBucket(t));
  return db && bucket ? { db, bucket } : undefined;
}

/** A content store on a fresh bucket, keys under `<prefix>/` as the platform lays them out. */
export async function testContentStore(t: TestContext, prefix: string): Promise<(S3ContentStore & { testBucket: TestBucket }) | undefined> {
  const bucket = await testBucket(t);
  if (!bucket) return undefined;
  const { S3Client } = await import("@aws-sdk/client-s3");
  const client = new S3Client(s3ClientConfig(bucket.server));
  t.after(() => client.destroy());
  return Object.assign(new S3ContentStore(client, bucket.name, `${prefix}/`), { testBucket: bucket });
}

/**
 * Asserts that every call is refused with the core 503 naming PostgreSQL, as a store on `pg` does when the server
 * cannot be reached (`unreachablePostgres()` gives such a pool).
 */
export async function assertPostgresRefusals(calls: readonly (() => Promise<unknown>)[]): Promise<void> {
  for (const call of calls) {
    const err = await call().then(
      () => assert.fail("expected a refusal"),
      (e: unknown) => e,
    );
    const refusal = dependencyRefusal(err);
    assert.equal(refusal?.status, 503, String(err));
    assert.match(refusal!.message, /PostgreSQL is unreachable/);
  }
}

/** A pool on an address where no PostgreSQL listens (connections refused at once); close it after the test. */
export const unreachablePostgres = () => new Postgres({ url: "postgres://nobody@127.0.0.1:1/none", poolSize: 1, connectTimeoutMs: 500 });

/** One node's connections to a test database, as a second node has its own: a pool and a bus (LISTEN/NOTIFY), with `area` migrated; closed after `t`. */
export async function testNodeConnections(
  t: TestContext,
  url: string,
  nodeId: string,
  area: string,
  migrations: readonly PgMigration[],
): Promise<{ pg: Postgres; bus: PostgresBus }> {
  const pg = new Postgres({ url, poolSize: 4 });
  const bus = new PostgresBus(pg, { url, nodeId });
  t.after(async () => {
    await bus.close();
    await pg.close();
  });
  await migrateArea(pg, area, migrations);
  await bus.start();
  return { pg, bus };
}
