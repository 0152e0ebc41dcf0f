import type { Migration } from "../core/db/sqlite.js";

/** The Workers database's schema (`<state>/db/workers.sqlite`), one append-only step per version. */
export const WORKERS_MIGRATIONS: readonly Migration[] = [
  `CREATE TABLE scripts (
     account_id TEXT NOT NULL,
     name TEXT NOT NULL,
     version_id TEXT NOT NULL,
     etag TEXT NOT NULL,
     main_module TEXT NOT NULL,
     compatibility_date TEXT NOT NULL,
     compatibility_flags TEXT NOT NULL,
     bindings TEXT NOT NULL,
     modules TEXT NOT NULL,
     created_on TEXT NOT NULL,
     modified_on TEXT NOT NULL,
     PRIMARY KEY (account_id, name)
   );
   -- The Host <script>.<workers domain> names no account, so a script name is unique platform-wide.
   CREATE UNIQUE INDEX scripts_name ON scripts(name);
   CREATE TABLE secrets (
     account_id TEXT NOT NULL,
     script TEXT NOT NULL,
     name TEXT NOT NULL,
     value TEXT NOT NULL,
     PRIMARY KEY (account_id, script, name),
     FOREIGN KEY (account_id, script) REFERENCES scripts(account_id, name) ON DELETE CASCADE
   );`,
  // Values are sealed (SecretBox) from now on; rows written before are sealed when the store opens.
  `ALTER TABLE secrets ADD COLUMN sealed INTEGER NOT NULL DEFAULT 0;`,
  // Cron triggers; last_tick is the latest tick claimed (ms since the epoch), so no tick runs twice.
  `CREATE TABLE schedules (
     account_id TEXT NOT NULL,
     script TEXT NOT NULL,
     cron TEXT NOT NULL,
     created_on TEXT NOT NULL,
     modified_on TEXT NOT NULL,
     last_tick INTEGER NOT NULL DEFAULT 0,
     PRIMARY KEY (account_id, script, cron),
     FOREIGN KEY (account_id, script) REFERENCES scripts(account_id, name) ON DELETE CASCADE
   );`,
];
