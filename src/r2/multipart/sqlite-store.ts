import { randomBytes } from "node:crypto";
import type { Readable } from "node:stream";
import type { ContentStore, StoredContent } from "../../core/content/store.js";
import type { Db } from "../../core/db/sqlite.js";
import { R2Errors } from "../errors.js";
import { assembleUpload, assertPartNumber, beforeBody, newUploadFields } from "../objects/bodies.js";
import type { Segment } from "../rows.js";
import { SqliteUploadListing } from "./sqlite-listing.js";
import { R2Limits } from "../limits.js";
import {
  type BucketRef,
  type R2ListPartsResult,
  type R2ListUploadsOptions,
  type R2ListUploadsResult,
  type R2MultipartOptions,
  type R2ObjectInfo,
  type R2UploadedPart,
} from "../store.js";
import { assertKey } from "../validation.js";

/** What multipart uploads use of the SQLite object store they complete into (sqlite-store.ts). */
interface SqliteObjectWriter {
  /** The bucket's row id; refuses a bucket that does not exist. */
  bucketId(ref: BucketRef): number;
  /** Streams a body into a new content file (limits, announced size and digests checked). */
  storeBody(body: Readable | Buffer, opts: { size?: number }): Promise<StoredContent>;
  /** Replaces the object's row with `info` made of `segments`, inside the caller's transaction. */
  commitObject(bucket: BucketRef, key: string, info: R2ObjectInfo, segments: Segment[], opts: object): boolean;
  /** Content no row refers to any more: removed once its readers are done. */
  discard(ids: readonly string[]): void;
}

/**
 * Multipart uploads in SQLite (`uploads` and `parts`): each part is a content file of its own, and completing an
 * upload commits an object whose segments are those files, so no byte is copied. The methods are R2Store's; the
 * listings of uploads and parts (S3's ListMultipartUploads and ListParts) are in sqlite-upload-listing.ts.
 */
export class SqliteMultipart {
  private readonly listing: SqliteUploadListing;
  private readonly q;

  constructor(
    private readonly db: Db,
    private readonly content: ContentStore,
    private readonly objects: SqliteObjectWriter,
  ) {
    this.listing = new SqliteUploadListing(db);
    this.q = {
      insertUpload: db.prepare("INSERT INTO uploads (upload_id, bucket_id, key, http, custom, storage_class, created) VALUES (?, ?, ?, ?, ?, ?, ?)"),
      upload: db.prepare<[string, number, string], { http: string; custom: string; storage_class: string; created: number }>(
        "SELECT http, custom, storage_class, created FROM uploads WHERE upload_id = ? AND bucket_id = ? AND key = ?",
      ),
      deleteUpload: db.prepare("DELETE FROM uploads WHERE upload_id = ?"),
      parts: db.prepare<[string], { part_number: number; content_id: string; size: number; md5: string }>(
        "SELECT part_number, content_id, size, md5 FROM parts WHERE upload_id = ? ORDER BY part_number",
      ),
      insertPart: db.prepare("INSERT INTO parts (upload_id, part_number, content_id, size, md5, uploaded) VALUES (?, ?, ?, ?, ?, ?)"),
      partContent: db.prepare<[string, number], { content_id: string }>("SELECT content_id FROM parts WHERE upload_id = ? AND part_number = ?"),
      replacePart: db.prepare("UPDATE parts SET content_id = ?, size = ?, md5 = ?, uploaded = ? WHERE upload_id = ? AND part_number = ?"),
      allPartContent: db.prepare<[], { content_id: string }>("SELECT content_id FROM parts"),
      staleUploads: db.prepare<[number], { upload_id: string }>("SELECT upload_id FROM uploads WHERE created < ?"),
    };
  }

  /** The content ids of every part stored so far (they are live until their upload completes or is aborted). */
  *partContentIds(): Iterable<string> {
    for (const r of this.q.allPartContent.iterate()) yield r.content_id;
  }

  createMultipartUpload(bucket: BucketRef, key: string, opts: R2MultipartOptions = {}): string {
    const { http, custom, storageClass } = newUploadFields(key, opts);
    const uploadId = randomBytes(24).toString("base64url");
    this.q.insertUpload.run(uploadId, this.objects.bucketId(bucket), key, http, custom, storageClass, Date.now());
    return uploadId;
  }

  private requireUpload(bucket: BucketRef, key: string, uploadId: string) {
    assertKey(key);
    if (typeof uploadId !== "string" || !uploadId) throw R2Errors.noSuchUpload();
    const u = this.q.upload.get(uploadId, this.objects.bucketId(bucket), key);
    if (!u) throw R2Errors.noSuchUpload();
    return u;
  }

  async uploadPart(bucket: BucketRef, key: string, uploadId: string, partNumber: number, body: Readable | Buffer, size?: number): Promise<R2UploadedPart> {
    await beforeBody(body, () => {
      this.requireUpload(bucket, key, uploadId);
      assertPartNumber(partNumber);
    });
    const stored = await this.objects.storeBody(body, { size });
    let replaced: string | undefined;
    try {
      this.db
        .transaction(() => {
          this.requireUpload(bucket, key, uploadId);
          const prev = this.q.partContent.get(uploadId, partNumber);
          if (prev) {
            replaced = prev.content_id;
            this.q.replacePart.run(stored.id, stored.size, stored.md5, Date.now(), uploadId, partNumber);
          } else this.q.insertPart.run(uploadId, partNumber, stored.id, stored.size, stored.md5, Date.now());
        })
        .immediate();
    } catch (e) {
      await this.content.delete(stored.id);
      throw e;
    }
    if (replaced) this.objects.discard([replaced]);
    return { partNumber, etag: stored.md5 };
  }

  async completeMultipartUpload(bucket: BucketRef, key: string, uploadId: string, parts: R2UploadedPart[]): Promise<R2ObjectInfo> {
    const upload = this.requireUpload(bucket, key, uploadId);
    const stored = new Map(this.q.parts.all(uploadId).map((p) => [p.part_number, p]));
    const { info, segments, unused } = assembleUpload(key, upload, parts, stored);
    this.db
      .transaction(() => {
        this.requireUpload(bucket, key, uploadId);
        this.objects.commitObject(bucket, key, info, segments, {});
        this.q.deleteUpload.run(uploadId);
      })
      .immediate();
    this.objects.discard(unused);
    return info;
  }

  async listMultipartUploads(bucket: BucketRef, opts: R2ListUploadsOptions = {}): Promise<R2ListUploadsResult> {
    return this.listing.uploads(this.objects.bucketId(bucket), opts);
  }

  async listParts(bucket: BucketRef, key: string, uploadId: string, opts: { partNumberMarker?: number; limit?: number } = {}): Promise<R2ListPartsResult> {
    return this.listing.parts(uploadId, this.requireUpload(bucket, key, uploadId), opts);
  }

  /** Aborts multipart uploads started before `cutoff` (ms), as R2's default lifecycle does after 7 days. Returns how many. */
  abortStaleUploads(cutoff: number): number {
    let ids: string[] = [];
    let n = 0;
    this.db
      .transaction(() => {
        const stale = this.q.staleUploads.all(cutoff);
        for (const { upload_id } of stale) {
          ids = ids.concat(this.q.parts.all(upload_id).map((p) => p.content_id));
          this.q.deleteUpload.run(upload_id);
        }
        n = stale.length;
      })
      .immediate();
    this.objects.discard(ids);
    return n;
  }

  async abortMultipartUpload(bucket: BucketRef, key: string, uploadId: string): Promise<void> {
    let ids: string[] = [];
    this.db
      .transaction(() => {
        this.requireUpload(bucket, key, uploadId);
        ids = this.q.parts.all(uploadId).map((p) => p.content_id);
        this.q.deleteUpload.run(uploadId);
      })
      .immediate();
    this.objects.discard(ids);
  }
}
