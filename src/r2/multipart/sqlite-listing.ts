import type { Db } from "../../core/db/sqlite.js";
import { listPartsPage, listUploads, type UploadRow } from "./listing.js";
import type { R2ListPartsResult, R2ListUploadsOptions, R2ListUploadsResult } from "../store.js";

/** The scans of upload-listing.ts on SQLite (`uploads` and `parts`). */
export class SqliteUploadListing {
  private readonly q;

  constructor(db: Db) {
    const cols = "key, upload_id, created, storage_class";
    this.q = {
      // Three starting points, so that SQLite seeks on (bucket_id, key, upload_id) with a single lower bound each.
      fromKey: db.prepare<[number, string, number], UploadRow>(`SELECT ${cols} FROM uploads WHERE bucket_id = ? AND key >= ? ORDER BY key, upload_id LIMIT ?`),
      afterKey: db.prepare<[number, string, number], UploadRow>(`SELECT ${cols} FROM uploads WHERE bucket_id = ? AND key > ? ORDER BY key, upload_id LIMIT ?`),
      afterUpload: db.prepare<[number, string, string, string, number], UploadRow>(
        `SELECT ${cols} FROM uploads WHERE bucket_id = ? AND (key > ? OR (key = ? AND upload_id > ?)) ORDER BY key, upload_id LIMIT ?`,
      ),
      parts: db.prepare<[string, number, number], { part_number: number; size: number; md5: string; uploaded: number }>(
        "SELECT part_number, size, md5, uploaded FROM parts WHERE upload_id = ? AND part_number > ? ORDER BY part_number LIMIT ?",
      ),
    };
  }

  uploads(bucketId: number, opts: R2ListUploadsOptions): Promise<R2ListUploadsResult> {
    return listUploads((from, n) => {
      if ("inclusive" in from) return this.q.fromKey.all(bucketId, from.key, n);
      if (from.uploadId === undefined) return this.q.afterKey.all(bucketId, from.key, n);
      return this.q.afterUpload.all(bucketId, from.key, from.key, from.uploadId, n);
    }, opts);
  }

  parts(uploadId: string, upload: { created: number; storage_class: string }, opts: { partNumberMarker?: number; limit?: number }): Promise<R2ListPartsResult> {
    return listPartsPage((marker, n) => this.q.parts.all(uploadId, marker, n), upload, opts);
  }
}
