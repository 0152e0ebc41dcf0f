import type { PgMigration } from "../../core/db/pg-migrations.js";

/** Workers Logs' tables on PostgreSQL (schema `workers_logs`), as the SQLite ones; times in ms since the epoch. */
export const LOGS_PG_MIGRATIONS: readonly PgMigration[] = [
  `CREATE TABLE settings (
     account_id TEXT COLLATE "C" NOT NULL,
     script TEXT COLLATE "C" NOT NULL,
     setting TEXT NOT NULL,
     PRIMARY KEY (account_id, script)
   );
   CREATE TABLE events (
     seq BIGSERIAL PRIMARY KEY,
     account_id TEXT COLLATE "C" NOT NULL,
     script TEXT COLLATE "C" NOT NULL,
     request_id TEXT COLLATE "C" NOT NULL,
     ts BIGINT NOT NULL,
     event_type TEXT COLLATE "C" NOT NULL,
     level TEXT COLLATE "C" NOT NULL,
     message TEXT COLLATE "C" NOT NULL,
     error TEXT COLLATE "C",
     outcome TEXT COLLATE "C" NOT NULL,
     status INTEGER,
     duration DOUBLE PRECISION,
     cpu DOUBLE PRECISION,
     method TEXT COLLATE "C",
     url TEXT COLLATE "C",
     trigger_name TEXT COLLATE "C" NOT NULL,
     origin TEXT COLLATE "C" NOT NULL,
     bytes INTEGER NOT NULL,
     body TEXT NOT NULL
   );
   CREATE INDEX events_account_ts ON events (account_id, ts);
   CREATE INDEX events_account_request ON events (account_id, request_id);
   CREATE INDEX events_ts ON events (ts);
   CREATE TABLE usage (
     account_id TEXT COLLATE "C" PRIMARY KEY,
     row_count BIGINT NOT NULL,
     byte_count BIGINT NOT NULL
   );`,
];
