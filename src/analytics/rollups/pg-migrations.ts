import type { PgMigration } from "../../core/db/pg-migrations.js";
import { hourTableDdl, moreSumsDdl, rollupTableDdl } from "./sql.js";

/** Per-minute rollups on PostgreSQL (schema `analytics`), as the SQLite ones. */
export const ROLLUP_PG_MIGRATIONS: readonly PgMigration[] = [
  `${rollupTableDdl("minute_rollups", 'TEXT COLLATE "C"', "BIGINT")};
   CREATE INDEX minute_rollups_by_minute ON minute_rollups (minute);`,
  moreSumsDdl("minute_rollups", "BIGINT"),
  // Rows existing before are added up into their hours.
  `${hourTableDdl("hour_rollups", 'TEXT COLLATE "C"', "BIGINT")};
   CREATE INDEX hour_rollups_by_minute ON hour_rollups (minute);
   INSERT INTO hour_rollups SELECT dataset, scope, MIN(account_id), minute - (minute % 3600), d1, d2, d3, d4, d5, node_id, SUM(count),
     SUM(s1), SUM(s2), SUM(s3), SUM(s4), SUM(s5), SUM(s6), SUM(s7), SUM(s8)
     FROM minute_rollups GROUP BY dataset, scope, minute - (minute % 3600), d1, d2, d3, d4, d5, node_id;`,
];
