import { KvErrors } from "./errors.js";
import { KV_LIMITS } from "./limits.js";
import type { KvKeyInfo, KvListOptions, KvListResult } from "./store.js";

/**
 * What every store's list() shares: the byte range a page covers and how its rows become the answer. Keys are
 * compared as UTF-8 bytes in every backend, so a cursor (the last key of a page) means the same everywhere.
 */
export interface ListRange {
  limit: number;
  /** Keys strictly after this one (the cursor), or from `from` on. */
  after?: Buffer;
  from?: Buffer;
  /** Keys strictly before this one (the end of the prefix range). */
  before?: Buffer;
}

/** Checks the options of a list() and turns them into the key range of the page. */
export function listRange(opts: KvListOptions): ListRange {
  const limit = opts.limit ?? KV_LIMITS.listLimit;
  if (!Number.isInteger(limit) || limit < 1 || limit > KV_LIMITS.listLimit) throw KvErrors.invalidLimit(opts.limit);
  const prefix = Buffer.from(opts.prefix ?? "", "utf8");
  const cursor = opts.cursor ? decodeCursor(opts.cursor) : undefined;
  const range: ListRange = { limit };
  if (cursor && Buffer.compare(cursor, prefix) >= 0) range.after = cursor;
  else if (prefix.length) range.from = prefix;
  if (prefix.length) range.before = prefixEnd(prefix);
  return range;
}

export interface ListRow {
  key: Buffer;
  expiration: number | null;
  metadata: string | null;
}

/** The answer for the rows of a page, fetched with one row more than `limit` to tell whether another page exists. */
export function listResult(rows: readonly ListRow[], limit: number): KvListResult {
  const more = rows.length > limit;
  const page = more ? rows.slice(0, limit) : rows;
  const keys = page.map((r) => {
    const k: KvKeyInfo = { name: r.key.toString("utf8") };
    if (r.expiration !== null) k.expiration = r.expiration;
    if (r.metadata !== null) k.metadata = JSON.parse(r.metadata);
    return k;
  });
  return more ? { keys, list_complete: false, cursor: page[page.length - 1]!.key.toString("base64url") } : { keys, list_complete: true };
}

function decodeCursor(cursor: string): Buffer {
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) throw KvErrors.invalidCursor();
  return Buffer.from(cursor, "base64url");
}

/** The smallest byte string greater than every string starting with `prefix` (UTF-8 never holds 0xff). */
function prefixEnd(prefix: Buffer): Buffer | undefined {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i]! < 0xff) {
      end[i]! += 1;
      return end.subarray(0, i + 1);
    }
  }
  return undefined;
}
