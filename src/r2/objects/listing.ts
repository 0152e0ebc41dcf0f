import { R2Errors } from "../errors.js";
import { objectInfo, type ObjectRow } from "../rows.js";
import { R2Limits } from "../limits.js";
import { type R2ListOptions, type R2ListResult, type R2ObjectInfo } from "../store.js";

/** Cursor = the last key or delimited prefix a page ended on, so the next page starts strictly after it. */
const encodeCursor = (after: string) => Buffer.from(after, "utf8").toString("base64url");
function decodeCursor(cursor: string): string {
  const after = Buffer.from(cursor, "base64url").toString("utf8");
  if (!after || encodeCursor(after) !== cursor) throw R2Errors.invalidCursor();
  return after;
}

/**
 * One page of a listing. `scan(from, inclusive, n)` returns up to n rows in key order starting at (or just
 * after) `from`. With a delimiter, keys that continue past it are grouped into one delimited prefix and the
 * scan jumps over the rest of them. Objects and prefixes count together against the limit; the cursor is the
 * last item returned, so the next page starts strictly after it.
 */
export async function listObjects(
  scan: (from: string, inclusive: boolean, n: number) => ObjectRow[] | Promise<ObjectRow[]>,
  opts: R2ListOptions,
): Promise<R2ListResult> {
  const limit = opts.limit ?? R2Limits.maxListLimit;
  if (!Number.isInteger(limit) || limit < 1 || limit > R2Limits.maxListLimit) throw R2Errors.invalidListLimit();
  const prefix = opts.prefix ?? "";
  const delimiter = opts.delimiter || undefined;
  const withHttp = opts.include?.includes("httpMetadata") ?? false;
  const withCustom = opts.include?.includes("customMetadata") ?? false;
  let after = opts.startAfter ?? "";
  if (opts.cursor) {
    const c = decodeCursor(opts.cursor);
    if (c > after) after = c;
  }
  // A page resumed after a delimited prefix must not repeat it.
  let lastPrefix: string | undefined = delimiter && after.endsWith(delimiter) ? after : undefined;

  const objects: R2ObjectInfo[] = [];
  const delimitedPrefixes: string[] = [];
  let lastItem = "";
  let truncated = false;
  const batch = Math.min(limit + 1, 1000);
  let scanFrom = after;
  scan: for (;;) {
    const rows = await (scanFrom >= prefix ? scan(scanFrom, false, batch) : scan(prefix, true, batch));
    if (rows.length === 0) break;
    for (const row of rows) {
      scanFrom = row.key;
      if (!row.key.startsWith(prefix)) break scan;
      if (delimiter) {
        const at = row.key.indexOf(delimiter, prefix.length);
        if (at >= 0) {
          const common = row.key.slice(0, at + delimiter.length);
          // U+10FFFF sorts after any other character, so the next scan starts past every key under this
          // prefix; the startsWith check still catches a key that continues with U+10FFFF itself.
          const skip = common + "\u{10FFFF}";
          if (common === lastPrefix) {
            scanFrom = skip;
            continue scan;
          }
          if (objects.length + delimitedPrefixes.length === limit) {
            truncated = true;
            break scan;
          }
          delimitedPrefixes.push(common);
          lastPrefix = lastItem = common;
          scanFrom = skip;
          continue scan;
        }
      }
      if (objects.length + delimitedPrefixes.length === limit) {
        truncated = true;
        break scan;
      }
      const info = objectInfo(row);
      if (!withHttp) info.httpMetadata = {};
      if (!withCustom) info.customMetadata = {};
      objects.push(info);
      lastItem = row.key;
    }
    if (rows.length < batch) break;
  }
  return { objects, delimitedPrefixes, truncated, ...(truncated ? { cursor: encodeCursor(lastItem) } : {}) };
}
