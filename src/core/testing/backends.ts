import type { TestContext } from "node:test";
import { migrateArea, type PgMigration } from "../db/pg-migrations.js";
import { Postgres } from "../db/postgres.js";
import { testDatabase } from "./services.js";

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
