import type { Migration } from "../core/db/sqlite.js";

/** The R2 database (`<state>/db/r2.sqlite`): append-only migrations (rows.ts has the row shapes). */
/** The table of r2.sqlite that holds bodies up to 64 KiB. */
export const R2_SMALL_BODIES = "small_bodies";

export const r2Migrations: readonly Migration[] = [
  `CREATE TABLE buckets (
     id INTEGER PRIMARY KEY,
     account_id TEXT NOT NULL,
     name TEXT NOT NULL,
     created_at TEXT NOT NULL,
     location TEXT NOT NULL,
     storage_class TEXT NOT NULL,
     UNIQUE (account_id, name)
   );
   -- segments: JSON [[contentId, size], ...] in order; one entry unless the object came from a multipart upload.
   CREATE TABLE objects (
     bucket_id INTEGER NOT NULL REFERENCES buckets(id),
     key TEXT NOT NULL,
     version TEXT NOT NULL,
     size INTEGER NOT NULL,
     etag TEXT NOT NULL,
     uploaded INTEGER NOT NULL,
     http TEXT NOT NULL,
     custom TEXT NOT NULL,
     checksums TEXT NOT NULL,
     storage_class TEXT NOT NULL,
     segments TEXT NOT NULL,
     PRIMARY KEY (bucket_id, key)
   ) WITHOUT ROWID;
   CREATE TABLE uploads (
     upload_id TEXT PRIMARY KEY,
     bucket_id INTEGER NOT NULL REFERENCES buckets(id),
     key TEXT NOT NULL,
     http TEXT NOT NULL,
     custom TEXT NOT NULL,
     storage_class TEXT NOT NULL,
     created INTEGER NOT NULL
   );
   CREATE TABLE parts (
     upload_id TEXT NOT NULL REFERENCES uploads(upload_id) ON DELETE CASCADE,
     part_number INTEGER NOT NULL,
     content_id TEXT NOT NULL,
     size INTEGER NOT NULL,
     md5 TEXT NOT NULL,
     PRIMARY KEY (upload_id, part_number)
   );`,
  // For the S3 API: bucket CORS rules (JSON, as R2CorsRule[]), uploads listed by key, and when each part arrived
  // (parts stored before this migration say 0 and are reported with their upload's start).
  `CREATE TABLE bucket_cors (
     bucket_id INTEGER PRIMARY KEY REFERENCES buckets(id) ON DELETE CASCADE,
     rules TEXT NOT NULL
   );
   CREATE INDEX buckets_by_name ON buckets(name);
   CREATE INDEX uploads_by_key ON uploads(bucket_id, key, upload_id);
   ALTER TABLE parts ADD COLUMN uploaded INTEGER NOT NULL DEFAULT 0;`,
  // Bodies up to 64 KiB, kept here instead of in files of their own (core/content/db-small-store.ts). `created`
  // comes before the bytes so that a sweep reads it without following a body's overflow pages.
  `CREATE TABLE ${R2_SMALL_BODIES} (
     id TEXT PRIMARY KEY,
     created INTEGER NOT NULL,
     bytes BLOB NOT NULL
   );`,
  // Event notifications (notifications/rules.ts): rules, removed with their bucket, and the outbox: a message is
  // written by the transaction that changes the object and removed once the relay has put it in its queue
  // (message_id: what `edgecli state copy` knows a message by, as the other backend numbers rows itself).
  `CREATE TABLE notification_rules (
     rule_id TEXT PRIMARY KEY,
     bucket_id INTEGER NOT NULL REFERENCES buckets(id) ON DELETE CASCADE,
     queue_id TEXT NOT NULL,
     actions TEXT NOT NULL,
     prefix TEXT NOT NULL,
     suffix TEXT NOT NULL,
     description TEXT NOT NULL,
     created_at TEXT NOT NULL
   );
   CREATE INDEX notification_rules_by_bucket ON notification_rules(bucket_id);
   CREATE TABLE notification_outbox (
     id INTEGER PRIMARY KEY AUTOINCREMENT,
     account_id TEXT NOT NULL,
     queue_id TEXT NOT NULL,
     message_id TEXT NOT NULL UNIQUE,
     body TEXT NOT NULL,
     leased_until INTEGER NOT NULL DEFAULT 0
   );
   CREATE INDEX notification_outbox_by_lease ON notification_outbox(leased_until, id);`,
  // Each bucket's usage (what GraphQL's r2StorageAdaptiveGroups and `wrangler r2 bucket info` read), kept by
  // triggers in the transaction of every object or upload write, whatever the path (put, overwrite, delete, multipart
  // complete, copy, lifecycle, state copy), so that reading it costs a row per bucket instead of a pass over the
  // objects (270-380 ms of a stalled event loop for 1,000,000 objects). Computed once here for the buckets there are.
  // The object upsert is an ON CONFLICT update (an INSERT OR REPLACE would fire no delete trigger). OR REPLACE on the
  // bucket's row: a deleted bucket's number can be reused.
  `CREATE TABLE bucket_usage (
     bucket_id INTEGER PRIMARY KEY REFERENCES buckets(id) ON DELETE CASCADE,
     object_count INTEGER NOT NULL DEFAULT 0,
     payload_size INTEGER NOT NULL DEFAULT 0,
     metadata_size INTEGER NOT NULL DEFAULT 0,
     upload_count INTEGER NOT NULL DEFAULT 0
   );
   INSERT INTO bucket_usage (bucket_id, object_count, payload_size, metadata_size, upload_count)
     SELECT b.id,
       (SELECT count(*) FROM objects o WHERE o.bucket_id = b.id),
       (SELECT coalesce(sum(o.size), 0) FROM objects o WHERE o.bucket_id = b.id),
       (SELECT coalesce(sum(length(CAST(o.http AS BLOB)) + length(CAST(o.custom AS BLOB))), 0) FROM objects o WHERE o.bucket_id = b.id),
       (SELECT count(*) FROM uploads u WHERE u.bucket_id = b.id)
     FROM buckets b;
   CREATE TRIGGER bucket_usage_created AFTER INSERT ON buckets BEGIN
     INSERT OR REPLACE INTO bucket_usage (bucket_id) VALUES (NEW.id);
   END;
   CREATE TRIGGER bucket_usage_object_in AFTER INSERT ON objects BEGIN
     UPDATE bucket_usage SET object_count = object_count + 1, payload_size = payload_size + NEW.size,
       metadata_size = metadata_size + length(CAST(NEW.http AS BLOB)) + length(CAST(NEW.custom AS BLOB))
       WHERE bucket_id = NEW.bucket_id;
   END;
   CREATE TRIGGER bucket_usage_object_out AFTER DELETE ON objects BEGIN
     UPDATE bucket_usage SET object_count = object_count - 1, payload_size = payload_size - OLD.size,
       metadata_size = metadata_size - length(CAST(OLD.http AS BLOB)) - length(CAST(OLD.custom AS BLOB))
       WHERE bucket_id = OLD.bucket_id;
   END;
   CREATE TRIGGER bucket_usage_object_changed AFTER UPDATE ON objects BEGIN
     UPDATE bucket_usage SET object_count = object_count - 1, payload_size = payload_size - OLD.size,
       metadata_size = metadata_size - length(CAST(OLD.http AS BLOB)) - length(CAST(OLD.custom AS BLOB))
       WHERE bucket_id = OLD.bucket_id;
     UPDATE bucket_usage SET object_count = object_count + 1, payload_size = payload_size + NEW.size,
       metadata_size = metadata_size + length(CAST(NEW.http AS BLOB)) + length(CAST(NEW.custom AS BLOB))
       WHERE bucket_id = NEW.bucket_id;
   END;
   CREATE TRIGGER bucket_usage_upload_in AFTER INSERT ON uploads BEGIN
     UPDATE bucket_usage SET upload_count = upload_count + 1 WHERE bucket_id = NEW.bucket_id;
   END;
   CREATE TRIGGER bucket_usage_upload_out AFTER DELETE ON uploads BEGIN
     UPDATE bucket_usage SET upload_count = upload_count - 1 WHERE bucket_id = OLD.bucket_id;
   END;`,
];
