import type { Migration } from "../core/db/sqlite.js";

/** The AI gateway's SQLite file (<state>/db/ai-gateway.sqlite): append-only, each entry runs once. */
export const AI_GATEWAY_MIGRATIONS: readonly Migration[] = [
  `CREATE TABLE gateways (
     account_id TEXT NOT NULL,
     id TEXT NOT NULL,
     settings TEXT NOT NULL,
     created_at TEXT NOT NULL,
     modified_at TEXT NOT NULL,
     PRIMARY KEY (account_id, id)
   );
   CREATE TABLE logs (
     seq INTEGER PRIMARY KEY AUTOINCREMENT,
     id TEXT NOT NULL UNIQUE,
     account_id TEXT NOT NULL,
     gateway_id TEXT NOT NULL,
     created_at TEXT NOT NULL,
     provider TEXT NOT NULL,
     model TEXT,
     path TEXT NOT NULL,
     request_type TEXT,
     status_code INTEGER NOT NULL,
     success INTEGER NOT NULL,
     cached INTEGER NOT NULL,
     step INTEGER,
     duration INTEGER NOT NULL,
     tokens_in INTEGER,
     tokens_out INTEGER,
     cached_tokens INTEGER,
     reasoning_tokens INTEGER,
     cost REAL,
     cost_note TEXT,
     custom_cost INTEGER NOT NULL DEFAULT 0,
     metadata TEXT,
     request_content_type TEXT,
     response_content_type TEXT,
     request_size INTEGER NOT NULL DEFAULT 0,
     response_size INTEGER NOT NULL DEFAULT 0,
     authenticated INTEGER NOT NULL DEFAULT 0,
     event_id TEXT,
     feedback INTEGER,
     score REAL
   );
   CREATE INDEX logs_gateway_time ON logs (account_id, gateway_id, created_at);
   CREATE TABLE log_bodies (
     log_id TEXT PRIMARY KEY REFERENCES logs(id) ON DELETE CASCADE,
     request BLOB,
     response BLOB
   );`,
  // Bodies move into the log row: one insert per log instead of two plus a foreign-key check.
  `ALTER TABLE logs ADD COLUMN request_body BLOB;
   ALTER TABLE logs ADD COLUMN response_body BLOB;
   UPDATE logs SET request_body = (SELECT request FROM log_bodies WHERE log_id = logs.id),
                   response_body = (SELECT response FROM log_bodies WHERE log_id = logs.id);
   DROP TABLE log_bodies;`,
  // Provider keys stored on a gateway (BYOK); the secret is sealed (SecretBox), bound to its row.
  `CREATE TABLE provider_keys (
     account_id TEXT NOT NULL,
     gateway_id TEXT NOT NULL,
     id TEXT NOT NULL,
     provider_slug TEXT NOT NULL,
     alias TEXT NOT NULL,
     default_config INTEGER NOT NULL,
     secret_id TEXT NOT NULL,
     secret TEXT NOT NULL,
     modified_at TEXT NOT NULL,
     PRIMARY KEY (account_id, gateway_id, id),
     UNIQUE (account_id, gateway_id, provider_slug, alias)
   );`,
];
