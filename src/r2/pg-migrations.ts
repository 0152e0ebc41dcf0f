import type { PgMigration } from "../core/db/pg-migrations.js";

/**
 * r2.put_object as version 2 made it, and as version 3 makes it again with the body (`withBody`: the parameter
 * p_body and the column body, which a put without one sets to NULL).
 */
function putObjectFunction(withBody: boolean): string {
  const [param, column, value, set] = withBody ? [", p_body BYTEA", ", body", ", p_body", ", body = excluded.body"] : ["", "", "", ""];
  return `CREATE FUNCTION put_object(p_account TEXT, p_bucket TEXT, p_key TEXT, p_version TEXT, p_size BIGINT, p_etag TEXT,
       p_uploaded BIGINT, p_http TEXT, p_custom TEXT, p_checksums TEXT, p_storage_class TEXT, p_segments TEXT${param},
       OUT bucket_found BOOLEAN, OUT replaced TEXT)
   LANGUAGE plpgsql AS $$
   DECLARE b_id BIGINT;
   BEGIN
     SELECT id INTO b_id FROM r2.buckets WHERE account_id = p_account AND name = p_bucket FOR KEY SHARE;
     bucket_found := FOUND;
     IF NOT bucket_found THEN RETURN; END IF;
     PERFORM pg_advisory_xact_lock(hashtextextended(p_key, b_id));
     SELECT segments INTO replaced FROM r2.objects WHERE bucket_id = b_id AND key = p_key;
     INSERT INTO r2.objects (bucket_id, key, version, size, etag, uploaded, http, custom, checksums, storage_class, segments${column})
       VALUES (b_id, p_key, p_version, p_size, p_etag, p_uploaded, p_http, p_custom, p_checksums, p_storage_class, p_segments${value})
       ON CONFLICT (bucket_id, key) DO UPDATE SET version = excluded.version, size = excluded.size, etag = excluded.etag,
         uploaded = excluded.uploaded, http = excluded.http, custom = excluded.custom, checksums = excluded.checksums,
         storage_class = excluded.storage_class, segments = excluded.segments${set};
   END $$;`;
}

/**
 * The R2 tables on PostgreSQL (schema `r2`), one append-only step per version: the tables, constraints and indexes
 * of SQLite's migrations 1 and 2 (sqlite-migrations.ts). Keys, names and upload ids are COLLATE "C", so listings
 * come out bytewise in UTF-8, the order SQLite gives them (and S3 promises), whatever the database's locale. Sizes
 * and times (ms since the epoch) are BIGINT; metadata and segments stay JSON text, byte for byte what SQLite keeps.
 */
export const R2_PG_MIGRATIONS: PgMigration[] = [
  `CREATE TABLE buckets (
     id BIGSERIAL PRIMARY KEY,
     account_id TEXT COLLATE "C" NOT NULL,
     name TEXT COLLATE "C" NOT NULL,
     created_at TEXT NOT NULL,
     location TEXT NOT NULL,
     storage_class TEXT NOT NULL,
     UNIQUE (account_id, name)
   );
   CREATE INDEX buckets_by_name ON buckets(name);
   -- segments: JSON [[contentId, size], ...] in order; one entry unless the object came from a multipart upload.
   CREATE TABLE objects (
     bucket_id BIGINT NOT NULL REFERENCES buckets(id),
     key TEXT COLLATE "C" NOT NULL,
     version TEXT NOT NULL,
     size BIGINT NOT NULL,
     etag TEXT NOT NULL,
     uploaded BIGINT NOT NULL,
     http TEXT NOT NULL,
     custom TEXT NOT NULL,
     checksums TEXT NOT NULL,
     storage_class TEXT NOT NULL,
     segments TEXT NOT NULL,
     PRIMARY KEY (bucket_id, key)
   );
   CREATE TABLE uploads (
     upload_id TEXT COLLATE "C" PRIMARY KEY,
     bucket_id BIGINT NOT NULL REFERENCES buckets(id),
     key TEXT COLLATE "C" NOT NULL,
     http TEXT NOT NULL,
     custom TEXT NOT NULL,
     storage_class TEXT NOT NULL,
     created BIGINT NOT NULL
   );
   CREATE INDEX uploads_by_key ON uploads(bucket_id, key, upload_id);
   CREATE INDEX uploads_by_age ON uploads(created);
   CREATE TABLE parts (
     upload_id TEXT COLLATE "C" NOT NULL REFERENCES uploads(upload_id) ON DELETE CASCADE,
     part_number INTEGER NOT NULL,
     content_id TEXT NOT NULL,
     size BIGINT NOT NULL,
     md5 TEXT NOT NULL,
     uploaded BIGINT NOT NULL DEFAULT 0,
     PRIMARY KEY (upload_id, part_number)
   );
   -- Bucket CORS rules (JSON, as R2CorsRule[]).
   CREATE TABLE bucket_cors (
     bucket_id BIGINT PRIMARY KEY REFERENCES buckets(id) ON DELETE CASCADE,
     rules TEXT NOT NULL
   );`,
  // Version 2: an unconditional put's commit in one round trip (pg-store.ts): the bucket held until the commit, the
  // writers of one key taking turns under an advisory lock, the replaced object's segments returned so that its
  // bodies go after the commit. bucket_found is false when the bucket does not exist (nothing is written).
  putObjectFunction(false),
  // Version 3: bodies up to 64 KiB (SMALL_BODY_BYTES, as the embedded store keeps them in r2.sqlite) in the object's
  // row: written by the same statement as the row and read by the query that finds it, so a small PUT or GET makes
  // no S3 request. Such a row has segments '[]' and the bytes in body; every other row has body NULL. EXTERNAL: out
  // of line without compression (most object bodies are compressed already; pglz would spend CPU to gain nothing).
  // put_object takes the body too. A node of an earlier build cannot read such rows (docs/scale-out.md, upgrading):
  // its put_object is dropped so that its puts fail loudly, and the constraint refuses its other writes (which do
  // not know the column) instead of leaving a replaced row's old body in place; NOT VALID: no row has a body yet.
  `ALTER TABLE objects ADD COLUMN body BYTEA;
   ALTER TABLE objects ALTER COLUMN body SET STORAGE EXTERNAL;
   ALTER TABLE objects ADD CONSTRAINT body_or_segments CHECK (body IS NULL OR segments = '[]') NOT VALID;
   DROP FUNCTION put_object(TEXT, TEXT, TEXT, TEXT, BIGINT, TEXT, BIGINT, TEXT, TEXT, TEXT, TEXT, TEXT);
   ${putObjectFunction(true)}`,
  // Version 4: event notifications (notifications/rules.ts), as SQLite's migration 4: rules removed with their
  // bucket, and the outbox the object writes record messages in, leased by one node's relay at a time.
  `CREATE TABLE notification_rules (
     rule_id TEXT COLLATE "C" PRIMARY KEY,
     bucket_id BIGINT NOT NULL REFERENCES buckets(id) ON DELETE CASCADE,
     queue_id TEXT COLLATE "C" NOT NULL,
     actions TEXT NOT NULL,
     prefix TEXT COLLATE "C" NOT NULL,
     suffix TEXT COLLATE "C" NOT NULL,
     description TEXT NOT NULL,
     created_at TEXT COLLATE "C" NOT NULL,
     seq BIGSERIAL NOT NULL
   );
   CREATE INDEX notification_rules_by_bucket ON notification_rules(bucket_id);
   CREATE TABLE notification_outbox (
     id BIGSERIAL PRIMARY KEY,
     account_id TEXT COLLATE "C" NOT NULL,
     queue_id TEXT COLLATE "C" NOT NULL,
     message_id TEXT COLLATE "C" NOT NULL UNIQUE,
     body TEXT NOT NULL,
     leased_until BIGINT NOT NULL DEFAULT 0
   );
   CREATE INDEX notification_outbox_by_lease ON notification_outbox(leased_until, id);`,
  // Version 5: each bucket's usage, kept by triggers in the transaction of every object or upload write, as
  // SQLite's migration 6 (sqlite-migrations.ts has why), and computed once here for the buckets there are. The
  // functions name the schema: they run with the writer's search_path. Writers into one bucket take turns on its
  // usage row from their write to their commit (put_object commits in the statement that calls it).
  `CREATE TABLE bucket_usage (
     bucket_id BIGINT PRIMARY KEY REFERENCES buckets(id) ON DELETE CASCADE,
     object_count BIGINT NOT NULL DEFAULT 0,
     payload_size BIGINT NOT NULL DEFAULT 0,
     metadata_size BIGINT NOT NULL DEFAULT 0,
     upload_count BIGINT NOT NULL DEFAULT 0
   );
   INSERT INTO bucket_usage (bucket_id, object_count, payload_size, metadata_size, upload_count)
     SELECT b.id,
       (SELECT count(*) FROM objects o WHERE o.bucket_id = b.id),
       (SELECT coalesce(sum(o.size), 0) FROM objects o WHERE o.bucket_id = b.id),
       (SELECT coalesce(sum(octet_length(o.http) + octet_length(o.custom)), 0) FROM objects o WHERE o.bucket_id = b.id),
       (SELECT count(*) FROM uploads u WHERE u.bucket_id = b.id)
     FROM buckets b;
   CREATE FUNCTION bucket_usage_created() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     INSERT INTO r2.bucket_usage (bucket_id) VALUES (NEW.id);
     RETURN NULL;
   END $$;
   CREATE TRIGGER bucket_usage_created AFTER INSERT ON buckets FOR EACH ROW EXECUTE FUNCTION bucket_usage_created();
   CREATE FUNCTION bucket_usage_objects() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     IF TG_OP <> 'INSERT' THEN
       UPDATE r2.bucket_usage SET object_count = object_count - 1, payload_size = payload_size - OLD.size,
         metadata_size = metadata_size - octet_length(OLD.http) - octet_length(OLD.custom)
         WHERE bucket_id = OLD.bucket_id;
     END IF;
     IF TG_OP <> 'DELETE' THEN
       UPDATE r2.bucket_usage SET object_count = object_count + 1, payload_size = payload_size + NEW.size,
         metadata_size = metadata_size + octet_length(NEW.http) + octet_length(NEW.custom)
         WHERE bucket_id = NEW.bucket_id;
     END IF;
     RETURN NULL;
   END $$;
   CREATE TRIGGER bucket_usage_objects AFTER INSERT OR UPDATE OF bucket_id, size, http, custom OR DELETE ON objects
     FOR EACH ROW EXECUTE FUNCTION bucket_usage_objects();
   CREATE FUNCTION bucket_usage_uploads() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     IF TG_OP = 'INSERT' THEN
       UPDATE r2.bucket_usage SET upload_count = upload_count + 1 WHERE bucket_id = NEW.bucket_id;
     ELSE
       UPDATE r2.bucket_usage SET upload_count = upload_count - 1 WHERE bucket_id = OLD.bucket_id;
     END IF;
     RETURN NULL;
   END $$;
   CREATE TRIGGER bucket_usage_uploads AFTER INSERT OR DELETE ON uploads FOR EACH ROW EXECUTE FUNCTION bucket_usage_uploads();`,
  // Version 6: a bucket's usage in up to 64 stripe rows, summed by readers. With one row, concurrent writes into one
  // bucket took turns on it until each commit (its WAL flush included): small PUTs through the v4 API ran at half the
  // rate of version 4 (docs/benchmarks.md, "Read-your-writes across nodes" has the run). A write now adds to the
  // stripe of its PostgreSQL session, so the pool's sessions hardly ever meet on a row; a stripe's values may go
  // below zero (a delete counted in another stripe than the write), their sum never does. Stripe 0 is the bucket's
  // own row, made with it, so a bucket always has one.
  `ALTER TABLE bucket_usage ADD COLUMN stripe SMALLINT NOT NULL DEFAULT 0;
   ALTER TABLE bucket_usage DROP CONSTRAINT bucket_usage_pkey;
   ALTER TABLE bucket_usage ADD PRIMARY KEY (bucket_id, stripe);
   CREATE FUNCTION usage_stripe() RETURNS smallint LANGUAGE sql STABLE AS $$ SELECT (pg_backend_pid() % 64)::smallint $$;
   -- Adds to the session's stripe of a bucket; nothing for a bucket being deleted (its objects and uploads go with it
   -- in the same statement, and the stripe's row could not reference it).
   CREATE FUNCTION add_usage(b_id BIGINT, d_count BIGINT, d_payload BIGINT, d_metadata BIGINT, d_uploads BIGINT)
   RETURNS void LANGUAGE sql AS $$
     INSERT INTO r2.bucket_usage AS u (bucket_id, stripe, object_count, payload_size, metadata_size, upload_count)
       SELECT b_id, r2.usage_stripe(), d_count, d_payload, d_metadata, d_uploads WHERE EXISTS (SELECT 1 FROM r2.buckets WHERE id = b_id)
       ON CONFLICT (bucket_id, stripe) DO UPDATE SET object_count = u.object_count + EXCLUDED.object_count,
         payload_size = u.payload_size + EXCLUDED.payload_size, metadata_size = u.metadata_size + EXCLUDED.metadata_size,
         upload_count = u.upload_count + EXCLUDED.upload_count
   $$;
   CREATE OR REPLACE FUNCTION bucket_usage_objects() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     IF TG_OP = 'UPDATE' AND NEW.bucket_id = OLD.bucket_id THEN
       PERFORM r2.add_usage(NEW.bucket_id, 0, NEW.size - OLD.size,
         octet_length(NEW.http) + octet_length(NEW.custom) - octet_length(OLD.http) - octet_length(OLD.custom), 0);
       RETURN NULL;
     END IF;
     IF TG_OP <> 'INSERT' THEN
       PERFORM r2.add_usage(OLD.bucket_id, -1, -OLD.size, -(octet_length(OLD.http) + octet_length(OLD.custom)), 0);
     END IF;
     IF TG_OP <> 'DELETE' THEN
       PERFORM r2.add_usage(NEW.bucket_id, 1, NEW.size, octet_length(NEW.http) + octet_length(NEW.custom), 0);
     END IF;
     RETURN NULL;
   END $$;
   CREATE OR REPLACE FUNCTION bucket_usage_uploads() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     IF TG_OP = 'INSERT' THEN
       PERFORM r2.add_usage(NEW.bucket_id, 0, 0, 0, 1);
     ELSE
       PERFORM r2.add_usage(OLD.bucket_id, 0, 0, 0, -1);
     END IF;
     RETURN NULL;
   END $$;`,
  // Version 7: add_usage in PL/pgSQL. As a LANGUAGE sql function it was parsed and planned again at every call (a
  // SQL function's plan lives only as long as the query that calls it), 70 µs of PostgreSQL's CPU on every object
  // write; PL/pgSQL keeps its statement's plan for the session. A change that counts nothing (an overwrite of the
  // same size and metadata size) writes no stripe row: no row version, no WAL record, no row lock until the commit.
  `CREATE OR REPLACE FUNCTION add_usage(b_id BIGINT, d_count BIGINT, d_payload BIGINT, d_metadata BIGINT, d_uploads BIGINT)
   RETURNS void LANGUAGE plpgsql AS $$
   BEGIN
     IF d_count = 0 AND d_payload = 0 AND d_metadata = 0 AND d_uploads = 0 THEN RETURN; END IF;
     INSERT INTO r2.bucket_usage AS u (bucket_id, stripe, object_count, payload_size, metadata_size, upload_count)
       SELECT b_id, r2.usage_stripe(), d_count, d_payload, d_metadata, d_uploads WHERE EXISTS (SELECT 1 FROM r2.buckets WHERE id = b_id)
       ON CONFLICT (bucket_id, stripe) DO UPDATE SET object_count = u.object_count + EXCLUDED.object_count,
         payload_size = u.payload_size + EXCLUDED.payload_size, metadata_size = u.metadata_size + EXCLUDED.metadata_size,
         upload_count = u.upload_count + EXCLUDED.upload_count;
   END $$;`,
];
