import type { PgMigration } from "../core/db/pg-migrations.js";

/**
 * The AI gateway's tables on PostgreSQL (schema `ai_gateway`), append-only as the SQLite ones. Text compares
 * byte-wise (COLLATE "C"), as in SQLite, so orderings and ranges over ids and ISO times are the same on both.
 * Booleans of a log are 0/1 (SMALLINT) as in SQLite, so filters and orderings treat them alike; counts and sizes
 * that may be fractional or large are DOUBLE PRECISION (read back as numbers). Metadata stays the JSON text it was
 * written as (JSONB would reorder its keys).
 */
export const AI_GATEWAY_PG_MIGRATIONS: readonly PgMigration[] = [
  `CREATE TABLE gateways (
     account_id TEXT COLLATE "C" NOT NULL,
     id TEXT COLLATE "C" NOT NULL,
     settings TEXT NOT NULL,
     created_at TEXT COLLATE "C" NOT NULL,
     modified_at TEXT COLLATE "C" NOT NULL,
     PRIMARY KEY (account_id, id)
   );
   CREATE TABLE logs (
     seq BIGSERIAL PRIMARY KEY,
     id TEXT COLLATE "C" NOT NULL UNIQUE,
     account_id TEXT COLLATE "C" NOT NULL,
     gateway_id TEXT COLLATE "C" NOT NULL,
     created_at TEXT COLLATE "C" NOT NULL,
     provider TEXT COLLATE "C" NOT NULL,
     model TEXT COLLATE "C",
     path TEXT COLLATE "C" NOT NULL,
     request_type TEXT COLLATE "C",
     status_code INTEGER NOT NULL,
     success SMALLINT NOT NULL,
     cached SMALLINT NOT NULL,
     step INTEGER,
     duration DOUBLE PRECISION NOT NULL,
     tokens_in DOUBLE PRECISION,
     tokens_out DOUBLE PRECISION,
     cached_tokens DOUBLE PRECISION,
     reasoning_tokens DOUBLE PRECISION,
     cost DOUBLE PRECISION,
     cost_note TEXT COLLATE "C",
     custom_cost SMALLINT NOT NULL DEFAULT 0,
     metadata TEXT,
     request_content_type TEXT COLLATE "C",
     response_content_type TEXT COLLATE "C",
     request_size DOUBLE PRECISION NOT NULL DEFAULT 0,
     response_size DOUBLE PRECISION NOT NULL DEFAULT 0,
     authenticated SMALLINT NOT NULL DEFAULT 0,
     event_id TEXT COLLATE "C",
     feedback INTEGER,
     score DOUBLE PRECISION,
     request_body BYTEA,
     response_body BYTEA
   );
   CREATE INDEX logs_gateway_time ON logs (account_id, gateway_id, created_at);
   CREATE INDEX logs_gateway_seq ON logs (account_id, gateway_id, seq);
   -- How many logs each gateway holds, kept exact by every statement that adds or removes logs (the store's
   -- transactions), so a batch of a limited gateway reads one row instead of counting a large table. Its row is also
   -- the lock that serialises the batches of one gateway across nodes.
   CREATE TABLE log_counts (
     account_id TEXT COLLATE "C" NOT NULL,
     gateway_id TEXT COLLATE "C" NOT NULL,
     count BIGINT NOT NULL,
     PRIMARY KEY (account_id, gateway_id)
   );
   -- Rate limit windows, one row per gateway (settings version: modified_at) and window start (UNIX ms), shared by
   -- every node; rows past expires_at (UNIX ms: the end of the next window, when no sliding count reads them any
   -- more) are swept. UNLOGGED: a count writes no WAL, so its commit does not wait for a disk flush (the cost of a
   -- limited request); a PostgreSQL crash (not a clean restart) empties the table, starting every window afresh.
   CREATE UNLOGGED TABLE rate_windows (
     account_id TEXT COLLATE "C" NOT NULL,
     gateway_id TEXT COLLATE "C" NOT NULL,
     version TEXT COLLATE "C" NOT NULL,
     window_start BIGINT NOT NULL,
     count INTEGER NOT NULL,
     expires_at BIGINT NOT NULL,
     PRIMARY KEY (account_id, gateway_id, version, window_start)
   );
   CREATE INDEX rate_windows_expiry ON rate_windows (expires_at);`,
  // Provider keys stored on a gateway (BYOK); the secret is sealed (SecretBox), bound to its row. default_config is
  // 0/1 as in SQLite, so the state copy carries it as it is.
  `CREATE TABLE provider_keys (
     account_id TEXT COLLATE "C" NOT NULL,
     gateway_id TEXT COLLATE "C" NOT NULL,
     id TEXT COLLATE "C" NOT NULL,
     provider_slug TEXT COLLATE "C" NOT NULL,
     alias TEXT COLLATE "C" NOT NULL,
     default_config SMALLINT NOT NULL,
     secret_id TEXT COLLATE "C" NOT NULL,
     secret TEXT NOT NULL,
     modified_at TEXT COLLATE "C" NOT NULL,
     PRIMARY KEY (account_id, gateway_id, id),
     UNIQUE (account_id, gateway_id, provider_slug, alias)
   );`,
];
