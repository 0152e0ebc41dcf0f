import { createHash, type Hash } from "node:crypto";
import { pipeline, Readable, Transform } from "node:stream";
import { ContentTooLargeError, type ContentStore, type StoredContent } from "../core/content/store.js";
import type { Db } from "../core/db/sqlite.js";
import { ContentLeases } from "./content-leases.js";
import { R2Errors } from "./errors.js";
import { listObjects } from "./list-objects.js";
import { conditionHolds } from "./preconditions.js";
import { resolveRange } from "./ranges.js";
import { SmallBodyCache } from "./small-body-cache.js";
import { SqliteBucketCors } from "./sqlite-cors.js";
import { SqliteMultipart } from "./sqlite-multipart.js";
import { bucketInfo, newVersion, objectInfo, type BucketRow, type ObjectRow, type Segment } from "./sqlite-rows.js";
import {
  R2Limits,
  type BucketRef,
  type R2BucketInfo,
  type R2Checksums,
  type R2CorsRule,
  type R2GetOptions,
  type R2GetResult,
  type R2ListOptions,
  type R2ListPartsResult,
  type R2ListResult,
  type R2ListUploadsOptions,
  type R2ListUploadsResult,
  type R2MultipartOptions,
  type R2ObjectInfo,
  type R2PutOptions,
  type R2Store,
  type R2UploadedPart,
} from "./store.js";
import { assertBucketName, assertCustomMetadata, assertKey, assertStorageClass, cleanHttpMetadata } from "./validation.js";

const EXTRA_DIGESTS = ["sha1", "sha384", "sha512"] as const;

/**
 * Objects and buckets in SQLite; bytes in the content store. Every write streams the body to a new content
 * file first and then commits the row in one transaction (preconditions re-checked inside it), so a failed
 * or refused upload never leaves a partial object, and readers never see a row without its bytes. Multipart
 * uploads are kept by sqlite-multipart.ts, which completes them through the same write path.
 */
export class SqliteR2Store implements R2Store {
  private readonly leases: ContentLeases;
  private readonly small = new SmallBodyCache();
  private readonly cors: SqliteBucketCors;
  private readonly multipart: SqliteMultipart;
  private readonly q;

  constructor(
    private readonly db: Db,
    private readonly content: ContentStore,
  ) {
    this.leases = new ContentLeases(content);
    this.multipart = new SqliteMultipart(db, content, {
      bucketId: (ref) => this.bucketId(ref),
      storeBody: (body, opts) => this.storeBody(body, opts),
      commitObject: (bucket, key, info, segments, opts) => this.commitObject(bucket, key, info, segments, opts),
      discard: (ids) => this.discard(ids),
    });
    this.cors = new SqliteBucketCors(db);
    this.q = {
      bucket: db.prepare<[string, string], BucketRow>("SELECT id, name, created_at, location, storage_class FROM buckets WHERE account_id = ? AND name = ?"),
      buckets: db.prepare<[string, string, string, number], BucketRow>(
        "SELECT id, name, created_at, location, storage_class FROM buckets WHERE account_id = ? AND name > ? AND instr(name, ?) > 0 ORDER BY name LIMIT ?",
      ),
      insertBucket: db.prepare("INSERT INTO buckets (account_id, name, created_at, location, storage_class) VALUES (?, ?, ?, ?, ?)"),
      deleteBucket: db.prepare("DELETE FROM buckets WHERE id = ?"),
      bucketUsed: db.prepare<[number, number], { n: number }>(
        "SELECT (SELECT count(*) FROM (SELECT 1 FROM objects WHERE bucket_id = ? LIMIT 1)) + (SELECT count(*) FROM (SELECT 1 FROM uploads WHERE bucket_id = ? LIMIT 1)) AS n",
      ),
      object: db.prepare<[number, string], ObjectRow>("SELECT * FROM objects WHERE bucket_id = ? AND key = ?"),
      // Reads find bucket and object in one statement; the bucket is looked up alone only when no row came back.
      objectByBucketName: db.prepare<[string, string, string], ObjectRow>(
        "SELECT o.* FROM buckets b JOIN objects o ON o.bucket_id = b.id WHERE b.account_id = ? AND b.name = ? AND o.key = ?",
      ),
      upsertObject: db.prepare(
        `INSERT OR REPLACE INTO objects (bucket_id, key, version, size, etag, uploaded, http, custom, checksums, storage_class, segments)
         VALUES (@bucketId, @key, @version, @size, @etag, @uploaded, @http, @custom, @checksums, @storageClass, @segments)`,
      ),
      allSegments: db.prepare<[], { segments: string }>("SELECT segments FROM objects"),
      deleteObject: db.prepare<[number, string], { segments: string }>("DELETE FROM objects WHERE bucket_id = ? AND key = ? RETURNING segments"),
      // Two forms so that SQLite seeks with a single lower bound on the primary key.
      listAfter: db.prepare<[number, string, number], ObjectRow>("SELECT * FROM objects WHERE bucket_id = ? AND key > ? ORDER BY key LIMIT ?"),
      listFrom: db.prepare<[number, string, number], ObjectRow>("SELECT * FROM objects WHERE bucket_id = ? AND key >= ? ORDER BY key LIMIT ?"),
    };
  }

  /** Content ids any object or unfinished upload still refers to (for the content store's garbage collector). */
  async liveContent(): Promise<Set<string>> {
    const live = new Set<string>();
    for (const r of this.q.allSegments.iterate()) {
      for (const [id] of JSON.parse(r.segments) as Segment[]) live.add(id);
    }
    for (const id of this.multipart.partContentIds()) live.add(id);
    return live;
  }

  // ---- buckets ----

  async createBucket(accountId: string, name: string, opts: { location?: string; storageClass?: string } = {}): Promise<R2BucketInfo> {
    assertBucketName(name);
    const storageClass = assertStorageClass(opts.storageClass);
    const location = (opts.location ?? "auto").toLowerCase();
    const createdAt = new Date().toISOString();
    try {
      this.q.insertBucket.run(accountId, name, createdAt, location, storageClass);
    } catch (e) {
      if ((e as { code?: string }).code === "SQLITE_CONSTRAINT_UNIQUE") throw R2Errors.bucketAlreadyExists();
      throw e;
    }
    return { name, creationDate: createdAt, location, storageClass };
  }

  async getBucket(accountId: string, name: string): Promise<R2BucketInfo | undefined> {
    const r = this.q.bucket.get(accountId, name);
    return r && bucketInfo(r);
  }

  async listBuckets(accountId: string, opts: { nameContains?: string; startAfter?: string; limit?: number } = {}): Promise<R2BucketInfo[]> {
    return this.q.buckets.all(accountId, opts.startAfter ?? "", opts.nameContains ?? "", opts.limit ?? -1).map(bucketInfo);
  }

  async deleteBucket(accountId: string, name: string): Promise<void> {
    this.db
      .transaction(() => {
        const b = this.q.bucket.get(accountId, name);
        if (!b) throw R2Errors.bucketNotFound();
        if (this.q.bucketUsed.get(b.id, b.id)!.n > 0) throw R2Errors.bucketNotEmpty();
        this.q.deleteBucket.run(b.id);
      })
      .immediate();
  }

  private bucketId(ref: BucketRef): number {
    const b = this.q.bucket.get(ref.accountId, ref.bucketName);
    if (!b) throw R2Errors.bucketNotFound();
    return b.id;
  }

  // ---- objects ----

  /** The object's row; undefined when there is none; throws when the bucket does not exist. */
  private objectRow(bucket: BucketRef, key: string): ObjectRow | undefined {
    assertKey(key);
    const row = this.q.objectByBucketName.get(bucket.accountId, bucket.bucketName, key);
    if (!row) this.bucketId(bucket);
    return row;
  }

  async head(bucket: BucketRef, key: string): Promise<R2ObjectInfo | undefined> {
    const r = this.objectRow(bucket, key);
    return r && objectInfo(r);
  }

  async get(bucket: BucketRef, key: string, opts: R2GetOptions = {}): Promise<R2GetResult | undefined> {
    const row = this.objectRow(bucket, key);
    if (!row) return undefined;
    const object = objectInfo(row);
    if (opts.onlyIf && !conditionHolds(opts.onlyIf, object)) return { object, body: undefined, preconditionFailed: true };
    const range = resolveRange(opts.range, object.size);
    const segments: Segment[] = JSON.parse(row.segments);
    const cached = segments.length === 1 ? this.small.get(segments[0][0]) : undefined;
    if (cached) {
      const bytes = cached.subarray(range.offset, range.offset + range.length);
      // The stream is made only for callers that ask for it; the binding backend sends `bytes` as they are.
      return {
        object,
        range,
        bytes,
        get body() {
          return Readable.from([bytes], { objectMode: false });
        },
      };
    }
    let body = this.readSegments(segments, range);
    if (segments.length === 1 && range.length === object.size && object.size <= this.small.maxEntryBytes) body = this.remembering(segments[0][0], body);
    return { object, body, range };
  }

  /** Passes a small object's bytes through, keeping a copy for the next read once they all went by. */
  private remembering(id: string, source: Readable): Readable {
    const chunks: Buffer[] = [];
    const small = this.small;
    const out = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        chunks.push(chunk);
        cb(null, chunk);
      },
      flush(cb) {
        small.set(id, Buffer.concat(chunks));
        cb();
      },
    });
    // pipeline: an error on either side reaches the reader and closes the file (which ends the lease).
    pipeline(source, out, () => undefined);
    return out;
  }

  /** Content no row refers to any more: unlink it (after its readers) and forget any cached copy. */
  private discard(ids: readonly string[]): void {
    this.small.drop(ids);
    this.leases.remove(ids);
  }

  /** Streams [offset, offset+length) across the object's segments, holding a lease so a concurrent overwrite cannot unlink them mid-read. */
  private readSegments(segments: Segment[], range: { offset: number; length: number }): Readable {
    const ids = segments.map(([id]) => id);
    this.leases.acquire(ids);
    let body: Readable;
    if (segments.length === 1) {
      body = this.content.read(segments[0][0], range.offset === 0 && range.length === segments[0][1] ? undefined : range);
    } else {
      const content = this.content;
      body = Readable.from(
        (async function* () {
          let start = 0;
          let remaining = range.length;
          for (const [id, size] of segments) {
            const end = start + size;
            if (remaining > 0 && range.offset < end) {
              const offset = Math.max(range.offset - start, 0);
              const length = Math.min(size - offset, remaining);
              remaining -= length;
              yield* content.read(id, { offset, length });
            }
            start = end;
          }
        })(),
        { objectMode: false },
      );
    }
    body.once("close", () => this.leases.release(ids));
    return body;
  }

  async put(bucket: BucketRef, key: string, body: Readable | Buffer, opts: R2PutOptions = {}): Promise<R2ObjectInfo | undefined> {
    const discard = () => {
      if (!Buffer.isBuffer(body)) body.resume();
    };
    let bucketId: number;
    let httpMetadata;
    try {
      assertKey(key);
      assertCustomMetadata(opts.customMetadata);
      httpMetadata = cleanHttpMetadata(opts.httpMetadata);
      assertStorageClass(opts.storageClass);
      bucketId = this.bucketId(bucket);
      if (opts.size !== undefined && opts.size > R2Limits.maxObjectBytes) throw R2Errors.objectTooLarge();
    } catch (e) {
      discard();
      throw e;
    }
    // Refuse early when the precondition already fails, without storing the body; it is checked again at commit.
    if (opts.onlyIf && !conditionHolds(opts.onlyIf, this.q.object.get(bucketId, key))) {
      discard();
      return undefined;
    }
    const stored = await this.storeBody(body, opts);
    try {
      const checksums: R2Checksums = { md5: stored.md5 };
      verifyDigests(stored, opts, checksums);
      const info: R2ObjectInfo = {
        key,
        version: newVersion(),
        size: stored.size,
        etag: stored.md5,
        uploaded: Date.now(),
        httpMetadata,
        customMetadata: { ...opts.customMetadata },
        checksums,
        storageClass: opts.storageClass ?? "Standard",
      };
      const committed = this.commitObject(bucket, key, info, [[stored.id, stored.size]], opts);
      if (!committed) await this.content.delete(stored.id);
      return committed ? info : undefined;
    } catch (e) {
      await this.content.delete(stored.id);
      throw e;
    }
  }

  /** Streams the body into a new content file, computing the digests asked for on the way. */
  private async storeBody(body: Readable | Buffer, opts: R2PutOptions): Promise<StoredContent & { digests: Record<string, string> }> {
    const hashes = new Map<string, Hash>();
    for (const alg of EXTRA_DIGESTS) if (opts[alg] !== undefined) hashes.set(alg, createHash(alg));
    let source: Readable | Buffer = body;
    if (hashes.size > 0) {
      if (Buffer.isBuffer(body)) for (const h of hashes.values()) h.update(body);
      else
        source = body.pipe(
          new Transform({
            transform(chunk: Buffer, _enc, cb) {
              for (const h of hashes.values()) h.update(chunk);
              cb(null, chunk);
            },
          }),
        );
    }
    let stored: StoredContent;
    try {
      stored = await this.content.put(source, { maxBytes: R2Limits.maxObjectBytes, sha256: opts.sha256 !== undefined });
    } catch (e) {
      if (e instanceof ContentTooLargeError) throw R2Errors.objectTooLarge();
      throw e;
    }
    if (opts.size !== undefined && stored.size !== opts.size) {
      await this.content.delete(stored.id);
      throw R2Errors.sizeMismatch(stored.size, opts.size);
    }
    const digests: Record<string, string> = {};
    for (const [alg, h] of hashes) digests[alg] = h.digest("hex");
    return { ...stored, digests };
  }

  /** Replaces the row in one transaction if the bucket still exists and the precondition still holds. */
  private commitObject(bucket: BucketRef, key: string, info: R2ObjectInfo, segments: Segment[], opts: { onlyIf?: R2PutOptions["onlyIf"] }): boolean {
    let old: Segment[] | undefined;
    const ok = this.db
      .transaction(() => {
        const bucketId = this.bucketId(bucket);
        const current = this.q.object.get(bucketId, key);
        if (opts.onlyIf && !conditionHolds(opts.onlyIf, current)) return false;
        this.q.upsertObject.run({
          bucketId,
          key,
          version: info.version,
          size: info.size,
          etag: info.etag,
          uploaded: info.uploaded,
          http: JSON.stringify(info.httpMetadata),
          custom: JSON.stringify(info.customMetadata),
          checksums: JSON.stringify(info.checksums),
          storageClass: info.storageClass,
          segments: JSON.stringify(segments),
        });
        if (current) old = JSON.parse(current.segments);
        return true;
      })
      .immediate();
    if (old) this.discard(old.map(([id]) => id));
    return ok;
  }

  async delete(bucket: BucketRef, keys: string | string[]): Promise<void> {
    const list = typeof keys === "string" ? [keys] : keys;
    if (list.length > R2Limits.maxDeleteKeys) throw R2Errors.tooManyKeys();
    list.forEach(assertKey);
    const removed: string[] = [];
    this.db
      .transaction(() => {
        const bucketId = this.bucketId(bucket);
        for (const key of list) {
          const r = this.q.deleteObject.get(bucketId, key);
          if (r) for (const [id] of JSON.parse(r.segments) as Segment[]) removed.push(id);
        }
      })
      .immediate();
    this.discard(removed);
  }

  async list(bucket: BucketRef, opts: R2ListOptions = {}): Promise<R2ListResult> {
    const bucketId = this.bucketId(bucket);
    return listObjects((from, inclusive, n) => (inclusive ? this.q.listFrom : this.q.listAfter).all(bucketId, from, n), opts);
  }

  // ---- multipart (sqlite-multipart.ts) ----

  async createMultipartUpload(bucket: BucketRef, key: string, opts?: R2MultipartOptions): Promise<string> {
    return this.multipart.createMultipartUpload(bucket, key, opts);
  }

  uploadPart(bucket: BucketRef, key: string, uploadId: string, partNumber: number, body: Readable | Buffer, size?: number): Promise<R2UploadedPart> {
    return this.multipart.uploadPart(bucket, key, uploadId, partNumber, body, size);
  }

  completeMultipartUpload(bucket: BucketRef, key: string, uploadId: string, parts: R2UploadedPart[]): Promise<R2ObjectInfo> {
    return this.multipart.completeMultipartUpload(bucket, key, uploadId, parts);
  }

  abortMultipartUpload(bucket: BucketRef, key: string, uploadId: string): Promise<void> {
    return this.multipart.abortMultipartUpload(bucket, key, uploadId);
  }

  async abortStaleUploads(cutoff: number): Promise<number> {
    return this.multipart.abortStaleUploads(cutoff);
  }

  listMultipartUploads(bucket: BucketRef, opts?: R2ListUploadsOptions): Promise<R2ListUploadsResult> {
    return this.multipart.listMultipartUploads(bucket, opts);
  }

  listParts(bucket: BucketRef, key: string, uploadId: string, opts?: { partNumberMarker?: number; limit?: number }): Promise<R2ListPartsResult> {
    return this.multipart.listParts(bucket, key, uploadId, opts);
  }

  // ---- bucket CORS ----

  async getBucketCors(bucket: BucketRef): Promise<R2CorsRule[] | undefined> {
    return this.cors.get(this.bucketId(bucket));
  }

  async putBucketCors(bucket: BucketRef, rules: R2CorsRule[]): Promise<void> {
    this.cors.put(this.bucketId(bucket), rules);
  }

  async deleteBucketCors(bucket: BucketRef): Promise<void> {
    this.cors.delete(this.bucketId(bucket));
  }

  async corsRulesByBucketName(name: string): Promise<{ accountId: string; rules: R2CorsRule[] }[]> {
    return this.cors.byName(name);
  }
}

/** Compares the digests the caller announced with the ones computed while storing; records the ones given. */
function verifyDigests(stored: StoredContent & { digests: Record<string, string> }, opts: R2PutOptions, checksums: R2Checksums): void {
  const computed: Record<string, string | undefined> = { md5: stored.md5, sha256: stored.sha256, ...stored.digests };
  for (const alg of ["md5", "sha1", "sha256", "sha384", "sha512"] as const) {
    const expected = opts[alg];
    if (expected === undefined) continue;
    if (expected.toLowerCase() !== computed[alg]) throw R2Errors.digestMismatch(alg);
    checksums[alg] = computed[alg];
  }
}
