import type { Migration } from "../../core/db/sqlite.js";

/** Workers routes and Custom Domains (`<state>/db/worker-routes.sqlite`), one append-only step per version. */
export const ROUTES_MIGRATIONS: readonly Migration[] = [
  `CREATE TABLE routes (
     id TEXT PRIMARY KEY,
     zone_id TEXT NOT NULL,
     account_id TEXT NOT NULL,
     pattern TEXT NOT NULL,
     script TEXT,
     created_on TEXT NOT NULL,
     UNIQUE (zone_id, pattern)
   );
   CREATE INDEX routes_script ON routes (account_id, script);
   CREATE TABLE domains (
     id TEXT PRIMARY KEY,
     account_id TEXT NOT NULL,
     zone_id TEXT NOT NULL,
     zone_name TEXT NOT NULL,
     hostname TEXT NOT NULL UNIQUE,
     service TEXT NOT NULL,
     environment TEXT NOT NULL
   );
   CREATE INDEX domains_account ON domains (account_id, service);
   -- Workers whose <name>.<workers domain> URL is turned off (wrangler does so for a Worker deployed with routes).
   CREATE TABLE workers_dev_off (
     account_id TEXT NOT NULL,
     script TEXT NOT NULL,
     PRIMARY KEY (account_id, script)
   );`,
];
