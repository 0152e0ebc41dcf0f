import type { Db } from "../../core/db/sqlite.js";
import { EntryWriter, type CommitRow } from "../sqlite-entry-writer.js";

const asBuffer = (v: Uint8Array) => (Buffer.isBuffer(v) ? v : Buffer.from(v.buffer, v.byteOffset, v.byteLength));

/**
 * The writes of a streamed bulk put, as short transactions (sqlite-writer.ts runs them on its own thread and
 * connection). Values are staged as blobs while the body arrives, each batch its own transaction; `commit` then
 * writes every entry, naming its blob, in one transaction, so the bulk put is all or nothing without copying its
 * values while it holds the write lock. Until then no entry names a staged blob: readers cannot see them, and
 * `abandon` (or `abandonLeftovers` after a crash) deletes them.
 */
export class BulkStaging {
  private readonly writer: EntryWriter;
  private readonly s;

  constructor(private readonly db: Db) {
    this.writer = new EntryWriter(db);
    this.s = {
      begin: db.prepare<[number]>("INSERT INTO bulk_writes (started_at) VALUES (?)"),
      stage: db.prepare<[number, Buffer]>("INSERT INTO blobs (bulk_id, value) VALUES (?, ?)"),
      finish: db.prepare<[number]>("DELETE FROM bulk_writes WHERE id = ?"),
      // A blob an entry names is never deleted here, even if an id were ever reused.
      dropStaged: db.prepare<[number]>("DELETE FROM blobs WHERE bulk_id = ? AND NOT EXISTS (SELECT 1 FROM entries WHERE blob_id = blobs.id)"),
      leftovers: db.prepare<[], { id: number }>("SELECT id FROM bulk_writes"),
    };
  }

  /** Opens a bulk write; its id names its staged blobs. */
  begin(): number {
    return Number(this.s.begin.run(Date.now()).lastInsertRowid);
  }

  /** Stores `values` for bulk write `bulkId` in one transaction; returns their blob ids, in order. */
  stage(bulkId: number, values: readonly Uint8Array[]): number[] {
    return this.db.transaction(() => values.map((v) => Number(this.s.stage.run(bulkId, asBuffer(v)).lastInsertRowid)))();
  }

  /**
   * Writes every row in one transaction (404 if the namespace is gone); returns the content ids the rows replaced.
   * `bulkId` is undefined when nothing was staged (every value went to the content store).
   */
  commit(bulkId: number | undefined, namespaceId: string, rows: readonly CommitRow[]): string[] {
    // Rows that crossed from another thread arrive with Uint8Array keys and values.
    const own = rows.map((r) => ({ ...r, key: asBuffer(r.key), value: r.value && asBuffer(r.value) }));
    return this.db
      .transaction(() => {
        const replaced = this.writer.upsertAll(namespaceId, own);
        if (bulkId !== undefined) this.s.finish.run(bulkId);
        return replaced;
      })
      .immediate();
  }

  /** Deletes what bulk write `bulkId` staged; it will not be committed. */
  abandon(bulkId: number): void {
    this.db.transaction(() => {
      this.s.dropStaged.run(bulkId);
      this.s.finish.run(bulkId);
    })();
  }

  /** Deletes what bulk writes of an earlier run staged and never committed (that process is gone); returns how many. */
  abandonLeftovers(): number {
    const ids = this.s.leftovers.all().map((r) => r.id);
    for (const id of ids) this.abandon(id);
    return ids.length;
  }
}
