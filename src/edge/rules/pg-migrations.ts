import type { PgMigration } from "../../core/db/pg-migrations.js";

/** Cache Rules on PostgreSQL (schema `edge_rules`), as the SQLite ones. */
export const RULES_PG_MIGRATIONS: readonly PgMigration[] = [
  `CREATE TABLE cache_rulesets (
     zone_id TEXT COLLATE "C" NOT NULL PRIMARY KEY,
     account_id TEXT COLLATE "C" NOT NULL,
     version BIGINT NOT NULL,
     ruleset_json TEXT NOT NULL
   );`,
];
