import type { Migration } from "../../core/db/sqlite.js";

/** Zone settings (`<state>/db/edge-settings.sqlite`), one append-only step per version. */
export const SETTINGS_MIGRATIONS: readonly Migration[] = [
  `CREATE TABLE zone_settings (
     zone_id TEXT NOT NULL,
     account_id TEXT NOT NULL,
     setting TEXT NOT NULL,
     value_json TEXT NOT NULL,
     modified_on INTEGER NOT NULL,
     PRIMARY KEY (zone_id, setting)
   );`,
];
