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
  // Version 3: the group commit of single small-value writes (pg-store.ts): the writes of many requests, to any
  // namespaces, in one statement, one transaction, one WAL flush. A row whose namespace is gone is left out and its
  // namespace returned in `missing` (that request alone gets its 404). Rows arrive sorted by (namespace, key), each
  // once, and are locked in that order. A row already there is overwritten in place when it names no content (the
  // usual case: one index probe per row); a row that names content is only locked by the upsert (ON CONFLICT's WHERE
  // fails, the lock stays) and overwritten by the second statement, which reads its content id under that lock.
  `CREATE FUNCTION write_batch(p_ns TEXT[], p_keys BYTEA[], p_expirations BIGINT[], p_metadata TEXT[], p_values BYTEA[],
       p_channel TEXT, p_notices TEXT[], OUT missing TEXT[], OUT replaced TEXT[])
   LANGUAGE plpgsql AS $$
   DECLARE
     present TEXT[];
     wanted INT;
     written INT;
   BEGIN
     -- The namespaces stay until the commit (a namespace delete waits for it).
     SELECT coalesce(array_agg(id), '{}') INTO present
       FROM (SELECT id FROM kv.namespaces WHERE id = ANY(p_ns) ORDER BY id FOR KEY SHARE) locked;
     SELECT count(*) FILTER (WHERE ns = ANY(present)), coalesce(array_agg(DISTINCT ns) FILTER (WHERE NOT ns = ANY(present)), '{}')
       INTO wanted, missing FROM unnest(p_ns) ns;
     replaced := '{}';
     INSERT INTO kv.entries (ns_id, key, expiration, metadata, size, content_id, value)
       SELECT ns, key, expiration, metadata, octet_length(value), NULL, value
         FROM unnest(p_ns, p_keys, p_expirations, p_metadata, p_values) WITH ORDINALITY AS w(ns, key, expiration, metadata, value, i)
         WHERE ns = ANY(present) ORDER BY i
       ON CONFLICT (ns_id, key) DO UPDATE SET expiration = excluded.expiration, metadata = excluded.metadata,
         size = excluded.size, content_id = NULL, value = excluded.value
         WHERE entries.content_id IS NULL;
     GET DIAGNOSTICS written = ROW_COUNT;
     IF written < wanted THEN
       WITH changed AS (
         UPDATE kv.entries e SET expiration = w.expiration, metadata = w.metadata, size = octet_length(w.value),
             content_id = NULL, value = w.value
           FROM unnest(p_ns, p_keys, p_expirations, p_metadata, p_values) AS w(ns, key, expiration, metadata, value),
             kv.entries old
           WHERE e.ns_id = w.ns AND e.key = w.key AND e.content_id IS NOT NULL AND old.ns_id = e.ns_id AND old.key = e.key
           RETURNING old.content_id)
       SELECT coalesce(array_agg(content_id), '{}') INTO replaced FROM changed;
     END IF;
     PERFORM pg_notify(p_channel, n) FROM unnest(p_ns, p_notices) AS x(ns, n) WHERE n IS NOT NULL AND ns = ANY(present);
   END $$;`,
  // Version 4: write_batch's statements run on the plan their session keeps. PostgreSQL chose a new custom plan at
  // every call for the namespaces' lock (`id = ANY(p_ns) … FOR KEY SHARE`): 66 µs of planning a batch, about a sixth
  // of PostgreSQL's CPU on a batched write (bench/scale-out/round-trips.mjs). The generic plans (EXPLAIN, 300,000
  // entries): the namespaces read by their primary key's index once the table is large (a sequential scan while it
  // is a few pages), the upsert by (ns_id, key), the update of rows with content by the primary key's index.
  `ALTER FUNCTION write_batch(TEXT[], BYTEA[], BIGINT[], TEXT[], BYTEA[], TEXT, TEXT[]) SET plan_cache_mode = force_generic_plan;`,
];
