import type { Migration } from "../../core/db/sqlite.js";
import { hourTableDdl, moreSumsDdl, rollupTableDdl } from "./sql.js";

/** Per-minute rollups (`<state>/db/analytics.sqlite`), one append-only step per version. */
export const ROLLUP_MIGRATIONS: readonly Migration[] = [
  `${rollupTableDdl("minute_rollups", "TEXT", "INTEGER")};
   CREATE INDEX minute_rollups_by_minute ON minute_rollups (minute);`,
  moreSumsDdl("minute_rollups", "INTEGER"),
  // Rows existing before are added up into their hours.
  `${hourTableDdl("hour_rollups", "TEXT", "INTEGER")};
   CREATE INDEX hour_rollups_by_minute ON hour_rollups (minute);
   INSERT INTO hour_rollups SELECT dataset, scope, MIN(account_id), minute - (minute % 3600), d1, d2, d3, d4, d5, node_id, SUM(count),
     SUM(s1), SUM(s2), SUM(s3), SUM(s4), SUM(s5), SUM(s6), SUM(s7), SUM(s8)
     FROM minute_rollups GROUP BY dataset, scope, minute - (minute % 3600), d1, d2, d3, d4, d5, node_id;`,
];
