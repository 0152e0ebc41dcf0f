import type { Migration } from "../core/db/sqlite.js";

/** Append-only: the server and the --local CLI open the same file with these. */
export const D1_MIGRATIONS: readonly Migration[] = [
  `CREATE TABLE databases (
     uuid TEXT PRIMARY KEY,
     account_id TEXT NOT NULL,
     name TEXT NOT NULL,
     created_at TEXT NOT NULL,
     UNIQUE (account_id, name)
   );`,
];
