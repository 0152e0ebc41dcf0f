import type { PgMigration } from "../../core/db/pg-migrations.js";

/** Zone settings on PostgreSQL (schema `edge_settings`), as the SQLite ones. */
export const SETTINGS_PG_MIGRATIONS: readonly PgMigration[] = [
  `CREATE TABLE zone_settings (
     zone_id TEXT COLLATE "C" NOT NULL,
     account_id TEXT COLLATE "C" NOT NULL,
     setting TEXT COLLATE "C" NOT NULL,
     value_json TEXT NOT NULL,
     modified_on BIGINT NOT NULL,
     PRIMARY KEY (zone_id, setting)
   );`,
];
