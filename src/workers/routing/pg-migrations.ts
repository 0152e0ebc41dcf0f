import type { PgMigration } from "../../core/db/pg-migrations.js";

/** Workers routes and Custom Domains on PostgreSQL (schema `worker_routes`), as the SQLite ones. */
export const ROUTES_PG_MIGRATIONS: readonly PgMigration[] = [
  `CREATE TABLE routes (
     id TEXT PRIMARY KEY,
     zone_id TEXT COLLATE "C" NOT NULL,
     account_id TEXT COLLATE "C" NOT NULL,
     pattern TEXT COLLATE "C" NOT NULL,
     script TEXT COLLATE "C",
     created_on TEXT NOT NULL,
     seq BIGSERIAL,
     UNIQUE (zone_id, pattern)
   );
   CREATE INDEX routes_script ON routes (account_id, script);
   CREATE TABLE domains (
     id TEXT PRIMARY KEY,
     account_id TEXT COLLATE "C" NOT NULL,
     zone_id TEXT COLLATE "C" NOT NULL,
     zone_name TEXT COLLATE "C" NOT NULL,
     hostname TEXT COLLATE "C" NOT NULL UNIQUE,
     service TEXT COLLATE "C" NOT NULL,
     environment TEXT NOT NULL
   );
   CREATE INDEX domains_account ON domains (account_id, service);
   -- Workers whose <name>.<workers domain> URL is turned off (wrangler does so for a Worker deployed with routes).
   CREATE TABLE workers_dev_off (
     account_id TEXT COLLATE "C" NOT NULL,
     script TEXT COLLATE "C" NOT NULL,
     PRIMARY KEY (account_id, script)
   );`,
];
