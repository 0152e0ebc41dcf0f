import type { PgMigration } from "../../core/db/pg-migrations.js";

/** The static assets tables on PostgreSQL (schema `worker_assets`), as the SQLite ones; times in ms since the epoch. */
export const ASSETS_PG_MIGRATIONS: readonly PgMigration[] = [
  `CREATE TABLE upload_sessions (
     token_hash TEXT PRIMARY KEY,
     account_id TEXT COLLATE "C" NOT NULL,
     script TEXT COLLATE "C" NOT NULL,
     manifest TEXT NOT NULL,
     expires_at BIGINT NOT NULL
   );
   CREATE TABLE bodies (
     account_id TEXT COLLATE "C" NOT NULL,
     hash TEXT COLLATE "C" NOT NULL,
     content_id TEXT NOT NULL,
     content_type TEXT,
     size BIGINT NOT NULL,
     PRIMARY KEY (account_id, hash)
   );
   CREATE TABLE script_assets (
     account_id TEXT COLLATE "C" NOT NULL,
     script TEXT COLLATE "C" NOT NULL,
     manifest TEXT NOT NULL,
     config TEXT NOT NULL,
     PRIMARY KEY (account_id, script)
   );`,
  // Garbage collection of bodies no manifest names (collect.ts).
  `ALTER TABLE bodies ADD COLUMN orphaned_at BIGINT;`,
];
