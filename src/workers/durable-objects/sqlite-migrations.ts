import type { Migration } from "../../core/db/sqlite.js";

/** The Durable Objects database's schema (`<state>/db/durable-objects.sqlite`), one append-only step per version. */
export const DURABLE_OBJECTS_MIGRATIONS: readonly Migration[] = [
  `CREATE TABLE namespaces (
     id TEXT PRIMARY KEY,
     account_id TEXT NOT NULL,
     script TEXT NOT NULL,
     class_name TEXT NOT NULL,
     use_sqlite INTEGER NOT NULL,
     unique_key TEXT NOT NULL UNIQUE,
     created_on TEXT NOT NULL,
     UNIQUE (account_id, script, class_name)
   );
   CREATE TABLE migration_tags (
     account_id TEXT NOT NULL,
     script TEXT NOT NULL,
     tag TEXT NOT NULL,
     PRIMARY KEY (account_id, script)
   );`,
];
