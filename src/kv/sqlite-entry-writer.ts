import type { Db } from "../core/db/sqlite.js";
import { KvErrors } from "./errors.js";

/** One entry as it is committed: its value inline (`value`), in the content store (`contentId`) or a staged blob (`blobId`). */
export interface CommitRow {
  /** The key's UTF-8 bytes. */
  key: Buffer;
  expiration: number | null;
  metadata: string | null;
  size: number;
  value: Buffer | null;
  contentId: string | null;
  blobId: number | null;
}

/**
 * The statements that commit entries, prepared on one connection: the store's (single puts, putMany) or the bulk
 * writer thread's (bulk/sqlite-staging.ts), so both write rows the same way.
 */
export class EntryWriter {
  private readonly nsExists;
  private readonly oldContent;
  private readonly upsert;

  constructor(db: Db) {
    this.nsExists = db.prepare<[string], { id: string }>("SELECT id FROM namespaces WHERE id = ?");
    this.oldContent = db.prepare<[string, Buffer], { content_id: string | null }>("SELECT content_id FROM entries WHERE ns_id = ? AND key = ?");
    this.upsert = db.prepare(
      `INSERT INTO entries (ns_id, key, expiration, metadata, size, content_id, value, blob_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (ns_id, key) DO UPDATE SET expiration = excluded.expiration, metadata = excluded.metadata,
         size = excluded.size, content_id = excluded.content_id, value = excluded.value, blob_id = excluded.blob_id`,
    );
  }

  /**
   * Inside a write transaction: writes `rows` into `namespaceId` (404 once the namespace is gone) and returns the
   * content ids they replaced, to delete after the commit. A replaced blob goes with the row (see the triggers in
   * sqlite-migrations.ts).
   */
  upsertAll(namespaceId: string, rows: readonly CommitRow[]): string[] {
    if (!this.nsExists.get(namespaceId)) throw KvErrors.namespaceNotFound();
    const replaced: string[] = [];
    for (const r of rows) {
      const prev = this.oldContent.get(namespaceId, r.key);
      if (prev?.content_id) replaced.push(prev.content_id);
      this.upsert.run(namespaceId, r.key, r.expiration, r.metadata, r.size, r.contentId, r.value, r.blobId);
    }
    return replaced;
  }
}
