import { randomBytes } from "node:crypto";
import type { Readable } from "node:stream";
import type { Postgres, SqlRunner, Transaction } from "../../core/db/postgres.js";
import { R2Errors } from "../errors.js";
import { assembleUpload, assertPartNumber, beforeBody, newUploadFields, type ObjectBodies, type StoredPart } from "../objects/bodies.js";
import { assertPgText } from "../validation.js";
import type { Segment } from "../rows.js";
import { R2Limits } from "../limits.js";
import {
  type BucketRef,
  type R2Conditional,
  type R2ListPartsResult,
  type R2ListUploadsOptions,
  type R2ListUploadsResult,
  type R2MultipartOptions,
  type R2ObjectInfo,
  type R2UploadedPart,
} from "../store.js";
import { listPartsPage, listUploads, type UploadRow } from "./listing.js";
import { assertKey } from "../validation.js";
import type { ObjectWrite } from "../notifications/rules.js";

/** What multipart uploads use of the PostgreSQL object store they complete into (pg-store.ts). */
interface PgObjectWriter {
  /** The bucket's row id, optionally locked for the transaction `on`; refuses a bucket that does not exist. */
  bucketId(on: SqlRunner, ref: BucketRef, lock?: "FOR KEY SHARE"): Promise<string>;
  /** Replaces the object's row inside `tx`; returns the segments replaced (null: none), false when `onlyIf` failed. */
  commitObject(
    tx: Transaction,
    bucketId: string,
    key: string,
    info: R2ObjectInfo,
    segments: Segment[],
    onlyIf: R2Conditional | undefined,
    notify: ObjectWrite,
  ): Promise<Segment[] | null | false>;
}

interface UploadFields {
  http: string;
  custom: string;
  storage_class: string;
  created: number;
}

const UPLOAD_COLUMNS = "key, upload_id, created::float8 AS created, storage_class";

/**
 * Multipart uploads on PostgreSQL (`r2.uploads`, `r2.parts`): each part is content of its own, and completing an
 * upload commits an object whose segments are that content, so no byte is copied. Part writes, completion and abort
 * lock the upload's row, so that they take turns whichever nodes they arrive at.
 */
export class PgMultipart {
  constructor(
    private readonly pg: Postgres,
    private readonly bodies: ObjectBodies,
    private readonly objects: PgObjectWriter,
  ) {}

  async createMultipartUpload(bucket: BucketRef, key: string, opts: R2MultipartOptions = {}): Promise<string> {
    const { http, custom, storageClass } = newUploadFields(key, opts);
    assertPgText(key);
    const uploadId = randomBytes(24).toString("base64url");
    await this.pg.withTransaction(async (tx) => {
      const bucketId = await this.objects.bucketId(tx, bucket, "FOR KEY SHARE");
      await tx.execute("INSERT INTO r2.uploads (upload_id, bucket_id, key, http, custom, storage_class, created) VALUES ($1, $2, $3, $4, $5, $6, $7)", [
        uploadId,
        bucketId,
        key,
        http,
        custom,
        storageClass,
        Date.now(),
      ]);
    });
    return uploadId;
  }

  /** The upload's row (locked for `on`'s transaction when `forUpdate`); 404 when it is not an upload of this key. */
  private async requireUpload(
    on: SqlRunner,
    bucket: BucketRef,
    key: string,
    uploadId: string,
    forUpdate = false,
  ): Promise<UploadFields & { bucketId: string }> {
    assertKey(key);
    assertPgText(key);
    if (typeof uploadId !== "string" || !uploadId) throw R2Errors.noSuchUpload();
    assertPgText(uploadId);
    const bucketId = await this.objects.bucketId(on, bucket, forUpdate ? "FOR KEY SHARE" : undefined);
    const u = await on.row<UploadFields>(
      `SELECT http, custom, storage_class, created::float8 AS created FROM r2.uploads WHERE upload_id = $1 AND bucket_id = $2 AND key = $3 ${forUpdate ? "FOR UPDATE" : ""}`,
      [uploadId, bucketId, key],
    );
    if (!u) throw R2Errors.noSuchUpload();
    return { ...u, bucketId };
  }

  async uploadPart(bucket: BucketRef, key: string, uploadId: string, partNumber: number, body: Readable | Buffer, size?: number): Promise<R2UploadedPart> {
    await beforeBody(body, async () => {
      await this.requireUpload(this.pg, bucket, key, uploadId);
      assertPartNumber(partNumber);
    });
    const stored = await this.bodies.store(body, { size });
    let replaced: string | undefined;
    try {
      replaced = await this.pg.withTransaction(async (tx) => {
        await this.requireUpload(tx, bucket, key, uploadId, true);
        const prev = await tx.row<{ content_id: string }>("SELECT content_id FROM r2.parts WHERE upload_id = $1 AND part_number = $2", [uploadId, partNumber]);
        await tx.execute(
          `INSERT INTO r2.parts (upload_id, part_number, content_id, size, md5, uploaded) VALUES ($1, $2, $3, $4, $5, $6)
           ON CONFLICT (upload_id, part_number) DO UPDATE SET content_id = excluded.content_id, size = excluded.size, md5 = excluded.md5, uploaded = excluded.uploaded`,
          [uploadId, partNumber, stored.id, stored.size, stored.md5, Date.now()],
        );
        return prev?.content_id;
      });
    } catch (e) {
      await this.bodies.forget(stored.id).catch(() => undefined);
      throw e;
    }
    if (replaced) this.bodies.discard([replaced]);
    return { partNumber, etag: stored.md5 };
  }

  async completeMultipartUpload(bucket: BucketRef, key: string, uploadId: string, parts: R2UploadedPart[]): Promise<R2ObjectInfo> {
    const done = await this.pg.withTransaction(async (tx) => {
      const upload = await this.requireUpload(tx, bucket, key, uploadId, true);
      const rows = await tx.rows<StoredPart & { part_number: number }>(
        "SELECT part_number, content_id, size::float8 AS size, md5 FROM r2.parts WHERE upload_id = $1 ORDER BY part_number",
        [uploadId],
      );
      const assembled = assembleUpload(key, upload, parts, new Map(rows.map((p) => [p.part_number, p])));
      const old = await this.objects.commitObject(tx, upload.bucketId, key, assembled.info, assembled.segments, undefined, {
        bucket,
        action: "CompleteMultipartUpload",
      });
      await tx.execute("DELETE FROM r2.uploads WHERE upload_id = $1", [uploadId]);
      return { ...assembled, old: old || [] };
    });
    this.bodies.discard([...done.unused, ...done.old.map(([id]) => id)]);
    return done.info;
  }

  async listMultipartUploads(bucket: BucketRef, opts: R2ListUploadsOptions = {}): Promise<R2ListUploadsResult> {
    assertPgText(opts.prefix, opts.delimiter, opts.keyMarker, opts.uploadIdMarker);
    const bucketId = await this.objects.bucketId(this.pg, bucket);
    return listUploads((from, n) => {
      if ("inclusive" in from)
        return this.pg.rows<UploadRow>(`SELECT ${UPLOAD_COLUMNS} FROM r2.uploads WHERE bucket_id = $1 AND key >= $2 ORDER BY key, upload_id LIMIT $3`, [
          bucketId,
          from.key,
          n,
        ]);
      if (from.uploadId === undefined)
        return this.pg.rows<UploadRow>(`SELECT ${UPLOAD_COLUMNS} FROM r2.uploads WHERE bucket_id = $1 AND key > $2 ORDER BY key, upload_id LIMIT $3`, [
          bucketId,
          from.key,
          n,
        ]);
      return this.pg.rows<UploadRow>(
        `SELECT ${UPLOAD_COLUMNS} FROM r2.uploads WHERE bucket_id = $1 AND (key, upload_id) > ($2, $3) ORDER BY key, upload_id LIMIT $4`,
        [bucketId, from.key, from.uploadId, n],
      );
    }, opts);
  }

  async listParts(bucket: BucketRef, key: string, uploadId: string, opts: { partNumberMarker?: number; limit?: number } = {}): Promise<R2ListPartsResult> {
    const upload = await this.requireUpload(this.pg, bucket, key, uploadId);
    return listPartsPage(
      (marker, n) =>
        this.pg.rows(
          "SELECT part_number, size::float8 AS size, md5, uploaded::float8 AS uploaded FROM r2.parts WHERE upload_id = $1 AND part_number > $2 ORDER BY part_number LIMIT $3",
          [uploadId, marker, n],
        ),
      upload,
      opts,
    );
  }

  /** Aborts multipart uploads started before `cutoff` (ms), as R2's default lifecycle does after 7 days. Returns how many. */
  async abortStaleUploads(cutoff: number): Promise<number> {
    const { n, ids } = await this.pg.withTransaction(async (tx) => {
      const stale = (await tx.rows<{ upload_id: string }>("SELECT upload_id FROM r2.uploads WHERE created < $1 FOR UPDATE SKIP LOCKED", [cutoff])).map(
        (r) => r.upload_id,
      );
      return { n: stale.length, ids: await this.deleteUploads(tx, stale) };
    });
    this.bodies.discard(ids);
    return n;
  }

  async abortMultipartUpload(bucket: BucketRef, key: string, uploadId: string): Promise<void> {
    const ids = await this.pg.withTransaction(async (tx) => {
      await this.requireUpload(tx, bucket, key, uploadId, true);
      return this.deleteUploads(tx, [uploadId]);
    });
    this.bodies.discard(ids);
  }

  /** Deletes the uploads (their parts go with them); returns the parts' content ids. */
  private async deleteUploads(tx: Transaction, uploadIds: string[]): Promise<string[]> {
    if (uploadIds.length === 0) return [];
    const parts = await tx.rows<{ content_id: string }>("SELECT content_id FROM r2.parts WHERE upload_id = ANY($1::text[])", [uploadIds]);
    await tx.execute("DELETE FROM r2.uploads WHERE upload_id = ANY($1::text[])", [uploadIds]);
    return parts.map((p) => p.content_id);
  }
}
