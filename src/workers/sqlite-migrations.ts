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
  // Kept versions and deployments of each script (the live version stays in scripts). secrets: the script's secrets
  // when the version was made, name -> a digest of the sealed value (each seal has a fresh nonce, so a set changes it).
  // Every existing script starts with its live version and one deployment of it.
  `CREATE TABLE versions (
     account_id TEXT NOT NULL,
     script TEXT NOT NULL,
     id TEXT NOT NULL,
     number INTEGER NOT NULL,
     etag TEXT NOT NULL,
     main_module TEXT NOT NULL,
     compatibility_date TEXT NOT NULL,
     compatibility_flags TEXT NOT NULL,
     bindings TEXT NOT NULL,
     modules TEXT NOT NULL,
     secrets TEXT NOT NULL,
     triggered_by TEXT NOT NULL,
     message TEXT,
     tag TEXT,
     source TEXT NOT NULL,
     author TEXT,
     created_on TEXT NOT NULL,
     PRIMARY KEY (account_id, script, id),
     UNIQUE (account_id, script, number),
     FOREIGN KEY (account_id, script) REFERENCES scripts(account_id, name) ON DELETE CASCADE
   );
   CREATE TABLE deployments (
     account_id TEXT NOT NULL,
     script TEXT NOT NULL,
     id TEXT NOT NULL,
     seq INTEGER NOT NULL,
     versions TEXT NOT NULL,
     triggered_by TEXT,
     message TEXT,
     source TEXT NOT NULL,
     author TEXT,
     created_on TEXT NOT NULL,
     PRIMARY KEY (account_id, script, id),
     UNIQUE (account_id, script, seq),
     FOREIGN KEY (account_id, script) REFERENCES scripts(account_id, name) ON DELETE CASCADE
   );
   INSERT INTO versions (account_id, script, id, number, etag, main_module, compatibility_date, compatibility_flags, bindings, modules, secrets, triggered_by, source, created_on)
     SELECT account_id, name, version_id, 1, etag, main_module, compatibility_date, compatibility_flags, bindings, modules, '{}', 'upload', 'api', modified_on FROM scripts;
   INSERT INTO deployments (account_id, script, id, seq, versions, triggered_by, source, created_on)
     SELECT account_id, name, version_id, 1, json_array(json_object('version_id', version_id, 'percentage', 100)), 'upload', 'api', modified_on FROM scripts;`,
  // Tags of a script (script-settings `tags`), a JSON array of strings; the Worker's, not a version's.
  `ALTER TABLE scripts ADD COLUMN tags TEXT NOT NULL DEFAULT '[]';`,
];
