import type { Migration } from "../../core/db/sqlite.js";
import { moreSumsDdl, rollupTableDdl } from "./sql.js";

/** Per-minute rollups (`<state>/db/analytics.sqlite`), one append-only step per version. */
export const ROLLUP_MIGRATIONS: readonly Migration[] = [
  `${rollupTableDdl("minute_rollups", "TEXT", "INTEGER")};
   CREATE INDEX minute_rollups_by_minute ON minute_rollups (minute);`,
  moreSumsDdl("minute_rollups", "INTEGER"),
];
