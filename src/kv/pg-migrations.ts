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
  // Version 2: a write or delete of entries in one round trip (pg-store.ts), announcing itself on the bus from the
  // same statement (so the notice goes out exactly when the change commits). Each statement of a function takes its
  // own snapshot, so the lock-then-read order of the former transaction holds.
  `CREATE FUNCTION write_entries(p_ns TEXT, p_keys BYTEA[], p_expirations BIGINT[], p_metadata TEXT[], p_sizes INT[],
       p_content_ids TEXT[], p_values BYTEA[], p_channel TEXT, p_notice TEXT)
   RETURNS TEXT[] LANGUAGE plpgsql AS $$
   DECLARE replaced TEXT[];
   BEGIN
     -- The namespace stays until the commit (a namespace delete waits); NULL says it does not exist.
     PERFORM 1 FROM kv.namespaces WHERE id = p_ns FOR KEY SHARE;
     IF NOT FOUND THEN RETURN NULL; END IF;
     -- The rows written are locked in key order (two writers never deadlock); their content goes after the commit.
     SELECT coalesce(array_agg(content_id) FILTER (WHERE content_id IS NOT NULL), '{}') INTO replaced
       FROM (SELECT content_id FROM kv.entries WHERE ns_id = p_ns AND key = ANY(p_keys) ORDER BY key FOR UPDATE) locked;
     INSERT INTO kv.entries (ns_id, key, expiration, metadata, size, content_id, value)
       SELECT p_ns, * FROM unnest(p_keys, p_expirations, p_metadata, p_sizes, p_content_ids, p_values)
       ON CONFLICT (ns_id, key) DO UPDATE SET expiration = excluded.expiration, metadata = excluded.metadata,
         size = excluded.size, content_id = excluded.content_id, value = excluded.value;
     IF p_notice IS NOT NULL THEN PERFORM pg_notify(p_channel, p_notice); END IF;
     RETURN replaced;
   END $$;
   CREATE FUNCTION delete_entries(p_ns TEXT, p_keys BYTEA[], p_channel TEXT, p_notice TEXT)
   RETURNS TEXT[] LANGUAGE plpgsql AS $$
   DECLARE removed TEXT[];
   BEGIN
     WITH gone AS (DELETE FROM kv.entries WHERE ns_id = p_ns AND key = ANY(p_keys) RETURNING content_id)
       SELECT coalesce(array_agg(content_id) FILTER (WHERE content_id IS NOT NULL), '{}') INTO removed FROM gone;
     IF p_notice IS NOT NULL THEN PERFORM pg_notify(p_channel, p_notice); END IF;
     RETURN removed;
   END $$;`,
];
