import type { Migration } from "../../core/db/sqlite.js";

/** Workers Logs' schema (`<state>/db/workers-logs.sqlite`), one append-only step per version; times in ms since the epoch. */
export const LOGS_MIGRATIONS: readonly Migration[] = [
  `CREATE TABLE settings (
     account_id TEXT NOT NULL,
     script TEXT NOT NULL,
     setting TEXT NOT NULL,
     PRIMARY KEY (account_id, script)
   );
   CREATE TABLE events (
     seq INTEGER PRIMARY KEY AUTOINCREMENT,
     account_id TEXT NOT NULL,
     script TEXT NOT NULL,
     request_id TEXT NOT NULL,
     ts INTEGER NOT NULL,
     event_type TEXT NOT NULL,
     level TEXT NOT NULL,
     message TEXT NOT NULL,
     error TEXT,
     outcome TEXT NOT NULL,
     status INTEGER,
     duration REAL,
     cpu REAL,
     method TEXT,
     url TEXT,
     trigger_name TEXT NOT NULL,
     origin TEXT NOT NULL,
     bytes INTEGER NOT NULL,
     body TEXT NOT NULL
   );
   CREATE INDEX events_account_ts ON events (account_id, ts);
   CREATE INDEX events_account_request ON events (account_id, request_id);
   CREATE INDEX events_ts ON events (ts);
   CREATE TABLE usage (
     account_id TEXT PRIMARY KEY,
     row_count INTEGER NOT NULL,
     byte_count INTEGER NOT NULL
   );`,
];
