import type { PgMigration } from "../core/db/pg-migrations.js";

/**
 * The Workers tables on PostgreSQL (schema `workers`), append-only as the SQLite ones. Names are TEXT COLLATE "C" so
 * that lists come in byte order as on SQLite, whatever the database's locale. Bindings, flags and module refs stay
 * the JSON text they were written as. Secret values are always sealed (SecretBox), so there is no `sealed` column:
 * nothing was ever stored in clear here. Times of cron ticks are ms since the epoch (BIGINT).
 */
export const WORKERS_PG_MIGRATIONS: readonly PgMigration[] = [
  `CREATE TABLE scripts (
     account_id TEXT COLLATE "C" NOT NULL,
     name TEXT COLLATE "C" NOT NULL,
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
   CREATE UNIQUE INDEX scripts_name ON scripts (name);
   CREATE TABLE secrets (
     account_id TEXT COLLATE "C" NOT NULL,
     script TEXT COLLATE "C" NOT NULL,
     name TEXT COLLATE "C" NOT NULL,
     value TEXT NOT NULL,
     PRIMARY KEY (account_id, script, name),
     FOREIGN KEY (account_id, script) REFERENCES scripts (account_id, name) ON DELETE CASCADE
   );
   -- last_tick is the latest tick claimed (ms since the epoch): one UPDATE ... WHERE last_tick < tick claims a tick
   -- for one node of the cluster (the row lock makes a second claimer re-read it and lose).
   CREATE TABLE schedules (
     id BIGSERIAL,
     account_id TEXT COLLATE "C" NOT NULL,
     script TEXT COLLATE "C" NOT NULL,
     cron TEXT COLLATE "C" NOT NULL,
     created_on TEXT NOT NULL,
     modified_on TEXT NOT NULL,
     last_tick BIGINT NOT NULL DEFAULT 0,
     PRIMARY KEY (account_id, script, cron),
     FOREIGN KEY (account_id, script) REFERENCES scripts (account_id, name) ON DELETE CASCADE
   );`,
  // As on SQLite: kept versions and deployments of each script (the live version stays in scripts). secrets: the script's secrets
  // when the version was made, name -> a digest of the sealed value (each seal has a fresh nonce, so a set changes it).
  // Every existing script starts with its live version and one deployment of it.
  `CREATE TABLE versions (
     account_id TEXT COLLATE "C" NOT NULL,
     script TEXT COLLATE "C" NOT NULL,
     id TEXT COLLATE "C" NOT NULL,
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
     FOREIGN KEY (account_id, script) REFERENCES scripts (account_id, name) ON DELETE CASCADE
   );
   CREATE TABLE deployments (
     account_id TEXT COLLATE "C" NOT NULL,
     script TEXT COLLATE "C" NOT NULL,
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
     FOREIGN KEY (account_id, script) REFERENCES scripts (account_id, name) ON DELETE CASCADE
   );
   INSERT INTO versions (account_id, script, id, number, etag, main_module, compatibility_date, compatibility_flags, bindings, modules, secrets, triggered_by, source, created_on)
     SELECT account_id, name, version_id, 1, etag, main_module, compatibility_date, compatibility_flags, bindings, modules, '{}', 'upload', 'api', modified_on FROM scripts;
   INSERT INTO deployments (account_id, script, id, seq, versions, triggered_by, source, created_on)
     SELECT account_id, name, version_id, 1, json_build_array(json_build_object('version_id', version_id, 'percentage', 100))::text, 'upload', 'api', modified_on FROM scripts;`,
  // Tags of a script (script-settings `tags`), a JSON array of strings; the Worker's, not a version's.
  `ALTER TABLE workers.scripts ADD COLUMN tags TEXT NOT NULL DEFAULT '[]';`,
];
