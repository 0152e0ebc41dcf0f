import { UserError } from "../errors.js";
import type { Postgres, Transaction } from "./postgres.js";

/**
 * One PostgreSQL migration of an area: SQL (several statements may be separated by `;`) or a function for steps
 * SQL alone cannot do. The list is append-only, as for SQLite: a migration that shipped is never edited.
 */
export type PgMigration = string | ((tx: Transaction) => Promise<void>);

/** An area's name is its PostgreSQL schema: the areas' tables never collide, whatever they are called. */
const AREA_RE = /^[a-z][a-z0-9_]{0,62}$/;

/** Every area's migrations are serialised by this one advisory lock (any 64-bit number no one else uses). */
const MIGRATION_LOCK = 0x6564_6765_6d69_67n; // "edgemig"

/**
 * Brings an area's schema up to date, once, whichever node gets there first: under a transaction-level advisory
 * lock, in one transaction (PostgreSQL DDL is transactional: a failed step leaves the schema as it was). The
 * versions applied are rows of `public.schema_migrations (area, version)`. Each migration runs with
 * `search_path = <area>, public`, so it creates its tables in the area's schema; stores name them qualified
 * (`kv.entries`). A database an newer edgecli migrated further is refused: this node would misread it.
 * Returns how many migrations ran.
 */
export async function migrateArea(pg: Postgres, area: string, migrations: readonly PgMigration[]): Promise<number> {
  if (!AREA_RE.test(area)) throw new Error(`invalid area name for a PostgreSQL schema: ${JSON.stringify(area)}`);
  return pg.withTransaction(async (tx) => {
    await tx.execute("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK.toString()]);
    await tx.execute(
      `CREATE TABLE IF NOT EXISTS public.schema_migrations (
         area TEXT NOT NULL, version INT NOT NULL, applied_on TIMESTAMPTZ NOT NULL DEFAULT now(), PRIMARY KEY (area, version))`,
    );
    const current = Number((await tx.row<{ v: number | null }>("SELECT max(version) AS v FROM public.schema_migrations WHERE area = $1", [area]))?.v ?? 0);
    if (current > migrations.length) {
      throw new UserError(
        `The PostgreSQL schema of "${area}" is at version ${current}, newer than this edgecli knows (${migrations.length}): another node runs a newer edgecli. Upgrade edgecli on this node before starting it.`,
      );
    }
    if (current === migrations.length) return 0;
    await tx.execute(`CREATE SCHEMA IF NOT EXISTS ${area}`);
    await tx.execute(`SET LOCAL search_path TO ${area}, public`);
    for (let version = current + 1; version <= migrations.length; version++) {
      const m = migrations[version - 1];
      if (typeof m === "string") await tx.execute(m);
      else await m(tx);
      await tx.execute("INSERT INTO public.schema_migrations (area, version) VALUES ($1, $2)", [area, version]);
    }
    return migrations.length - current;
  });
}
