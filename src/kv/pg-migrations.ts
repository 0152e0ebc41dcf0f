import type { PgMigration } from "../core/db/pg-migrations.js";

/**
 * KV's tables on PostgreSQL (schema `kv`), append-only as the SQLite ones. Keys are BYTEA of UTF-8 bytes: ordering
 * and prefix ranges are byte comparisons whatever the database's locale, as in SQLite. Metadata stays the JSON text
 * it was written as (JSONB would reorder its keys). Expirations are UNIX seconds (BIGINT).
 */
export const KV_PG_MIGRATIONS: readonly PgMigration[] = [
  `CREATE TABLE namespaces (
     id TEXT COLLATE "C" PRIMARY KEY,
     account_id TEXT NOT NULL,
     title TEXT COLLATE "C" NOT NULL,
     created_at BIGINT NOT NULL,
     UNIQUE (account_id, title)
   );
   CREATE TABLE entries (
     ns_id TEXT COLLATE "C" NOT NULL REFERENCES namespaces(id) ON DELETE CASCADE,
     key BYTEA NOT NULL,
     expiration BIGINT,
     metadata TEXT,
     size INTEGER NOT NULL,
     content_id TEXT,
     value BYTEA,
     PRIMARY KEY (ns_id, key)
   );
   CREATE INDEX entries_expiration ON entries (expiration) WHERE expiration IS NOT NULL;
   CREATE INDEX entries_content ON entries (content_id) WHERE content_id IS NOT NULL;
   -- A streamed bulk write stages its entries here in short statements while its body arrives; one transaction then
   -- copies them into entries and deletes them (bulk/pg-writer.ts), so a bulk write is seen whole or not at all
   -- without a transaction held open while a client sends. Staged content ids count as live for gcContent.
   CREATE TABLE bulk_writes (id BIGSERIAL PRIMARY KEY, started_at TIMESTAMPTZ NOT NULL DEFAULT now());
   -- The columns of an entry (LIKE: without its foreign key, a namespace deleted meanwhile is the commit's 404).
   CREATE TABLE bulk_staged (
     bulk_id BIGINT NOT NULL REFERENCES bulk_writes(id) ON DELETE CASCADE,
     seq INTEGER NOT NULL,
     LIKE entries,
     PRIMARY KEY (bulk_id, seq)
   );
   CREATE INDEX bulk_staged_content ON bulk_staged (content_id) WHERE content_id IS NOT NULL;`,
];
