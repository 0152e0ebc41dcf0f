import type { Migration } from "../core/db/sqlite.js";

/** Append-only: the server, the --local CLI and the bulk writer thread open the same file with these. */
export const KV_MIGRATIONS: readonly Migration[] = [
  `CREATE TABLE namespaces (
     id TEXT PRIMARY KEY,
     account_id TEXT NOT NULL,
     title TEXT NOT NULL,
     created_at INTEGER NOT NULL,
     UNIQUE (account_id, title)
   );
   -- key is a BLOB of UTF-8 bytes so ordering and prefix ranges are plain byte comparisons.
   -- value comes last so listing (key, expiration, metadata) never reads a value's overflow pages.
   CREATE TABLE entries (
     ns_id TEXT NOT NULL REFERENCES namespaces(id) ON DELETE CASCADE,
     key BLOB NOT NULL,
     expiration INTEGER,
     metadata TEXT,
     size INTEGER NOT NULL,
     content_id TEXT,
     value BLOB,
     PRIMARY KEY (ns_id, key)
   ) WITHOUT ROWID;
   CREATE INDEX entries_expiration ON entries (expiration) WHERE expiration IS NOT NULL;
   CREATE INDEX entries_content ON entries (content_id) WHERE content_id IS NOT NULL;`,
  // Bulk writes stage their values here in short transactions while the body streams in (bulk/sqlite-staging.ts); one last
  // transaction points the entries at them (blob_id), so a bulk write is seen whole or not at all without its bytes
  // being copied while the write lock is held. A blob lives exactly as long as the entry naming it: the triggers
  // delete it when the entry lets go of it (overwrite, delete, expiry purge, namespace delete).
  // bulk_writes lists bulk writes under way; their blobs are not yet named by any entry. AUTOINCREMENT: an id is never
  // reused, so a bulk write's id names only its own blobs.
  `CREATE TABLE bulk_writes (id INTEGER PRIMARY KEY AUTOINCREMENT, started_at INTEGER NOT NULL);
   CREATE TABLE blobs (id INTEGER PRIMARY KEY, bulk_id INTEGER NOT NULL, value BLOB NOT NULL);
   CREATE INDEX blobs_bulk ON blobs (bulk_id);
   ALTER TABLE entries ADD COLUMN blob_id INTEGER;
   CREATE INDEX entries_blob ON entries (blob_id) WHERE blob_id IS NOT NULL;
   CREATE TRIGGER entries_blob_replaced AFTER UPDATE OF blob_id ON entries
     WHEN old.blob_id IS NOT NULL AND old.blob_id IS NOT new.blob_id
     BEGIN DELETE FROM blobs WHERE id = old.blob_id; END;
   CREATE TRIGGER entries_blob_deleted AFTER DELETE ON entries
     WHEN old.blob_id IS NOT NULL
     BEGIN DELETE FROM blobs WHERE id = old.blob_id; END;`,
];
