import { KV_LIMITS } from "../limits.js";
import type { CommitRow } from "../sqlite-entry-writer.js";
import { BulkEntryChecker } from "./entry.js";
import type { BulkStaging } from "./sqlite-staging.js";

/** What a bulk put needs beyond its staging connection. */
export interface BulkPutIo {
  /** Runs one write transaction when the store's other writes let it (SqliteKvStore.exclusive, across threads). */
  exclusive<T>(fn: () => T): Promise<T>;
  /** Stores a value too big to live in SQLite in the content store; returns its id. */
  putContent(value: Buffer): Promise<string>;
  /** Deletes content no committed entry names any more. */
  dropContent(ids: readonly string[]): Promise<void>;
}

/**
 * Values are staged in batches of about this many bytes (or entries). Each batch is one transaction, and the other
 * KV writes wait (asynchronously) for at most one batch.
 */
const BATCH_BYTES = 512 * 1024;
const BATCH_ENTRIES = 500;

/**
 * Writes the bulk-write entries `elements` yields into `namespaceId`, all or nothing; returns how many there were.
 * Each entry is validated as it arrives (the first bad one is the answer, with its index); values are staged in
 * short transactions and every entry is committed in one transaction at the end (see BulkStaging). After a bad
 * entry the rest is still read, so the answer names the first rule the body broke, in the order the API always
 * checked them: malformed JSON, not an array, too many entries, then the first bad entry.
 */
export async function bulkPut(staging: BulkStaging, io: BulkPutIo, namespaceId: string, elements: AsyncIterable<unknown>): Promise<number> {
  const rows: CommitRow[] = [];
  const contentIds: string[] = [];
  let bulkId: number | undefined;
  let batch: { row: CommitRow; value: Buffer }[] = [];
  let batchBytes = 0;
  const flush = async () => {
    if (!batch.length) return;
    const staged = batch;
    batch = [];
    batchBytes = 0;
    bulkId ??= await io.exclusive(() => staging.begin());
    const id = bulkId;
    const blobIds = await io.exclusive(() =>
      staging.stage(
        id,
        staged.map((s) => s.value),
      ),
    );
    staged.forEach((s, i) => (s.row.blobId = blobIds[i]!));
  };
  const abandon = async () => {
    const staged = bulkId;
    bulkId = undefined;
    rows.length = 0;
    batch = [];
    await io.dropContent(contentIds.splice(0));
    if (staged !== undefined) await io.exclusive(() => staging.abandon(staged));
  };

  const checker = new BulkEntryChecker();
  try {
    for await (const element of elements) {
      const refusedBefore = checker.refused;
      const p = checker.check(element);
      if (!p) {
        if (!refusedBefore && checker.refused) await abandon();
        continue;
      }
      const row: CommitRow = { key: p.key, expiration: p.expiration, metadata: p.metadata, size: p.value.length, value: null, contentId: null, blobId: null };
      rows.push(row);
      if (p.value.length > KV_LIMITS.inlineValueBytes) {
        row.contentId = await io.putContent(p.value);
        contentIds.push(row.contentId);
      } else {
        batch.push({ row, value: p.value });
        batchBytes += p.value.length;
        if (batchBytes >= BATCH_BYTES || batch.length >= BATCH_ENTRIES) await flush();
      }
    }
    const count = checker.finish();
    await flush();
    if (rows.length) {
      const id = bulkId;
      const replaced = await io.exclusive(() => staging.commit(id, namespaceId, rows));
      bulkId = undefined;
      contentIds.length = 0;
      await io.dropContent(replaced);
    }
    return count;
  } catch (err) {
    // What cannot be removed now is removed at the next start (BulkStaging.abandonLeftovers).
    await abandon().catch(() => undefined);
    throw err;
  }
}
