import type { Migration } from "../../core/db/sqlite.js";

/** The static assets database's schema (`<state>/db/worker-assets.sqlite`), one append-only step per version. */
export const ASSETS_MIGRATIONS: readonly Migration[] = [
  `CREATE TABLE upload_sessions (
     token_hash TEXT PRIMARY KEY,
     account_id TEXT NOT NULL,
     script TEXT NOT NULL,
     manifest TEXT NOT NULL,
     expires_at INTEGER NOT NULL
   );
   CREATE TABLE bodies (
     account_id TEXT NOT NULL,
     hash TEXT NOT NULL,
     content_id TEXT NOT NULL,
     content_type TEXT,
     size INTEGER NOT NULL,
     PRIMARY KEY (account_id, hash)
   );
   CREATE TABLE script_assets (
     account_id TEXT NOT NULL,
     script TEXT NOT NULL,
     manifest TEXT NOT NULL,
     config TEXT NOT NULL,
     PRIMARY KEY (account_id, script)
   );`,
  // Garbage collection of bodies no manifest names (collect.ts).
  `ALTER TABLE bodies ADD COLUMN orphaned_at INTEGER;`,
];
