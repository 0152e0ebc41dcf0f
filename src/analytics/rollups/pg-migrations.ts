import type { PgMigration } from "../../core/db/pg-migrations.js";
import { moreSumsDdl, rollupTableDdl } from "./sql.js";

/** Per-minute rollups on PostgreSQL (schema `analytics`), as the SQLite ones. */
export const ROLLUP_PG_MIGRATIONS: readonly PgMigration[] = [
  `${rollupTableDdl("minute_rollups", 'TEXT COLLATE "C"', "BIGINT")};
   CREATE INDEX minute_rollups_by_minute ON minute_rollups (minute);`,
  moreSumsDdl("minute_rollups", "BIGINT"),
];
