import type { Migration } from "../../core/db/sqlite.js";

/** Cache Rules (`<state>/db/edge-rules.sqlite`), one append-only step per version. */
export const RULES_MIGRATIONS: readonly Migration[] = [
  `CREATE TABLE cache_rulesets (
     zone_id TEXT NOT NULL PRIMARY KEY,
     account_id TEXT NOT NULL,
     version INTEGER NOT NULL,
     ruleset_json TEXT NOT NULL
   );`,
];
