import { R2Errors } from "../errors.js";
import { R2Limits } from "../limits.js";
import { type R2ListPartsResult, type R2ListUploadsOptions, type R2ListUploadsResult, type R2PendingUpload } from "../store.js";

/**
 * Listings of unfinished multipart uploads and of their parts (what S3's ListMultipartUploads and ListParts show),
 * whichever database keeps them: the callers give the scans (sqlite-upload-listing.ts, pg-multipart.ts).
 */

export interface UploadRow {
  key: string;
  upload_id: string;
  created: number;
  storage_class: string;
}

function checkedLimit(limit: number | undefined): number {
  const n = limit ?? R2Limits.maxListLimit;
  if (!Number.isInteger(n) || n < 1 || n > R2Limits.maxListLimit) {
    throw R2Errors.invalidListLimit();
  }
  return n;
}

/** Where an upload scan starts: at `key` itself, after every upload of `key`, or after (`key`, `uploadId`). */
export type UploadScan = (from: { key: string; inclusive: true } | { key: string; uploadId?: string }, n: number) => UploadRow[] | Promise<UploadRow[]>;

/**
 * One page of a bucket's uploads, in (key, upload id) order. With a delimiter, keys that continue past it are
 * grouped into one delimited prefix (counted once against the limit) and the scan jumps over the rest of them.
 */
export async function listUploads(scanFrom: UploadScan, opts: R2ListUploadsOptions): Promise<R2ListUploadsResult> {
  const limit = checkedLimit(opts.limit);
  const prefix = opts.prefix ?? "";
  const delimiter = opts.delimiter || undefined;
  // The position the scan continues from: after (key, uploadId), or after every upload of key when uploadId is undefined.
  let at: { key: string; uploadId?: string } = { key: opts.keyMarker ?? "", uploadId: opts.keyMarker ? opts.uploadIdMarker || undefined : "" };
  let lastPrefix = delimiter && opts.keyMarker?.endsWith(delimiter) ? opts.keyMarker : undefined;
  const scan = (n: number) => scanFrom(at.key < prefix ? { key: prefix, inclusive: true } : at, n);

  const uploads: R2PendingUpload[] = [];
  const delimitedPrefixes: string[] = [];
  let last: { key: string; uploadId?: string } | undefined;
  let truncated = false;
  const batch = Math.min(limit + 1, R2Limits.maxListLimit);
  scan: for (;;) {
    const rows = await scan(batch);
    for (const row of rows) {
      at = { key: row.key, uploadId: row.upload_id };
      if (!row.key.startsWith(prefix)) break scan;
      const cut = delimiter ? row.key.indexOf(delimiter, prefix.length) : -1;
      const common = cut >= 0 ? row.key.slice(0, cut + delimiter!.length) : undefined;
      if (common !== undefined && common === lastPrefix) {
        at = { key: common + "\u{10FFFF}" };
        continue scan;
      }
      if (uploads.length + delimitedPrefixes.length === limit) {
        truncated = true;
        break scan;
      }
      if (common !== undefined) {
        delimitedPrefixes.push(common);
        lastPrefix = common;
        last = { key: common };
        // U+10FFFF sorts after any other character: the next scan starts past every key under this prefix.
        at = { key: common + "\u{10FFFF}" };
        continue scan;
      }
      uploads.push({ key: row.key, uploadId: row.upload_id, initiated: row.created, storageClass: row.storage_class });
      last = { key: row.key, uploadId: row.upload_id };
    }
    if (rows.length < batch) break;
  }
  return {
    uploads,
    delimitedPrefixes,
    truncated,
    ...(truncated && last ? { nextKeyMarker: last.key, ...(last.uploadId ? { nextUploadIdMarker: last.uploadId } : {}) } : {}),
  };
}

/** The part rows a page of ListParts shows: after `marker`, by number, at most `n`. */
export type PartScan = (
  marker: number,
  n: number,
) => { part_number: number; size: number; md5: string; uploaded: number }[] | Promise<{ part_number: number; size: number; md5: string; uploaded: number }[]>;

/** One page of an upload's parts; `upload` is the upload's row (the caller has checked it exists). */
export async function listPartsPage(
  scan: PartScan,
  upload: { created: number; storage_class: string },
  opts: { partNumberMarker?: number; limit?: number },
): Promise<R2ListPartsResult> {
  const limit = checkedLimit(opts.limit);
  const marker = opts.partNumberMarker ?? 0;
  if (!Number.isInteger(marker) || marker < 0) throw R2Errors.invalidPartNumberMarker();
  const rows = await scan(marker, limit + 1);
  const truncated = rows.length > limit;
  const page = rows.slice(0, limit);
  return {
    parts: page.map((p) => ({ partNumber: p.part_number, etag: p.md5, size: p.size, uploaded: p.uploaded || upload.created })),
    truncated,
    ...(truncated ? { nextPartNumberMarker: page[page.length - 1].part_number } : {}),
    storageClass: upload.storage_class,
    initiated: upload.created,
  };
}
