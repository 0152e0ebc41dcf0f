import { createHash, randomBytes, type Hash } from "node:crypto";
import { pipeline, Readable, Transform } from "node:stream";
import { ContentTooLargeError, type ContentStore, type StoredContent } from "../core/content/store.js";
import type { Db } from "../core/db/sqlite.js";
import { ContentLeases } from "./content-leases.js";
import { conditionHolds } from "./preconditions.js";
import { resolveRange } from "./ranges.js";
import { listObjects } from "./list-objects.js";
import { bucketInfo, objectInfo, type BucketRow, type ObjectRow, type Segment } from "./schema.js";
import { SmallBodyCache } from "./small-body-cache.js";
import { SqliteBucketCors } from "./sqlite-cors.js";
import { SqliteUploadListing } from "./sqlite-upload-listing.js";
import {
  R2Codes,
  R2Error,
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

export { r2Migrations } from "./schema.js";

const notFoundBucket = () => new R2Error(404, R2Codes.bucketNotFound, "The specified bucket does not exist.");
const noSuchUpload = () => new R2Error(404, R2Codes.noSuchUpload, "The specified multipart upload does not exist.");
const newVersion = () => randomBytes(16).toString("hex");
const EXTRA_DIGESTS = ["sha1", "sha384", "sha512"] as const;

/**
 * Objects and buckets in SQLite; bytes in the content store. Every write streams the body to a new content
 * file first and then commits the row in one transaction (preconditions re-checked inside it), so a failed
 * or refused upload never leaves a partial object, and readers never see a row without its bytes.
 */
export class SqliteR2Store implements R2Store {
  private readonly leases: ContentLeases;
  private readonly small = new SmallBodyCache();
  private readonly cors: SqliteBucketCors;
  private readonly uploadListing: SqliteUploadListing;
  private readonly q;

  constructor(
    private readonly db: Db,
    private readonly content: ContentStore,
  ) {
    this.leases = new ContentLeases(content);
    this.cors = new SqliteBucketCors(db);
    this.uploadListing = new SqliteUploadListing(db);
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
      deleteObject: db.prepare<[number, string], { segments: string }>("DELETE FROM objects WHERE bucket_id = ? AND key = ? RETURNING segments"),
      // Two forms so that SQLite seeks with a single lower bound on the primary key.
      listAfter: db.prepare<[number, string, number], ObjectRow>("SELECT * FROM objects WHERE bucket_id = ? AND key > ? ORDER BY key LIMIT ?"),
      listFrom: db.prepare<[number, string, number], ObjectRow>("SELECT * FROM objects WHERE bucket_id = ? AND key >= ? ORDER BY key LIMIT ?"),
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
    };
  }

  /** Content ids any row still refers to (for the content store's garbage collector). */
  liveContent(): Set<string> {
    const live = new Set<string>();
    for (const r of this.db.prepare<[], { segments: string }>("SELECT segments FROM objects").iterate()) {
      for (const [id] of JSON.parse(r.segments) as Segment[]) live.add(id);
    }
    for (const r of this.db.prepare<[], { content_id: string }>("SELECT content_id FROM parts").iterate()) live.add(r.content_id);
    return live;
  }

  // ---- buckets ----

  createBucket(accountId: string, name: string, opts: { location?: string; storageClass?: string } = {}): R2BucketInfo {
    assertBucketName(name);
    const storageClass = assertStorageClass(opts.storageClass);
    const location = (opts.location ?? "auto").toLowerCase();
    const createdAt = new Date().toISOString();
    try {
      this.q.insertBucket.run(accountId, name, createdAt, location, storageClass);
    } catch (e) {
      if ((e as { code?: string }).code === "SQLITE_CONSTRAINT_UNIQUE") {
        throw new R2Error(409, R2Codes.bucketAlreadyExists, "The bucket you tried to create already exists, and you own it.");
      }
      throw e;
    }
    return { name, creationDate: createdAt, location, storageClass };
  }

  getBucket(accountId: string, name: string): R2BucketInfo | undefined {
    const r = this.q.bucket.get(accountId, name);
    return r && bucketInfo(r);
  }

  listBuckets(accountId: string, opts: { nameContains?: string; startAfter?: string; limit?: number } = {}): R2BucketInfo[] {
    return this.q.buckets.all(accountId, opts.startAfter ?? "", opts.nameContains ?? "", opts.limit ?? -1).map(bucketInfo);
  }

  deleteBucket(accountId: string, name: string): void {
    this.db
      .transaction(() => {
        const b = this.q.bucket.get(accountId, name);
        if (!b) throw notFoundBucket();
        if (this.q.bucketUsed.get(b.id, b.id)!.n > 0) {
          throw new R2Error(409, R2Codes.bucketNotEmpty, "The bucket you tried to delete is not empty.");
        }
        this.q.deleteBucket.run(b.id);
      })
      .immediate();
  }

  private bucketId(ref: BucketRef): number {
    const b = this.q.bucket.get(ref.accountId, ref.bucketName);
    if (!b) throw notFoundBucket();
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

  head(bucket: BucketRef, key: string): R2ObjectInfo | undefined {
    const r = this.objectRow(bucket, key);
    return r && objectInfo(r);
  }

  get(bucket: BucketRef, key: string, opts: R2GetOptions = {}): R2GetResult | undefined {
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
      if (opts.size !== undefined && opts.size > R2Limits.maxObjectBytes) throw tooLarge();
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
      if (!committed) this.content.deleteSync(stored.id);
      return committed ? info : undefined;
    } catch (e) {
      this.content.deleteSync(stored.id);
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
      if (e instanceof ContentTooLargeError) throw tooLarge();
      throw e;
    }
    if (opts.size !== undefined && stored.size !== opts.size) {
      this.content.deleteSync(stored.id);
      throw new R2Error(400, R2Codes.invalidArgument, `The body has ${stored.size} bytes but ${opts.size} were announced`);
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
    if (list.length > R2Limits.maxDeleteKeys) throw new R2Error(400, R2Codes.invalidArgument, `At most ${R2Limits.maxDeleteKeys} keys can be deleted at once`);
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

  list(bucket: BucketRef, opts: R2ListOptions = {}): R2ListResult {
    const bucketId = this.bucketId(bucket);
    return listObjects((from, inclusive, n) => (inclusive ? this.q.listFrom : this.q.listAfter).all(bucketId, from, n), opts);
  }

  // ---- multipart ----

  createMultipartUpload(bucket: BucketRef, key: string, opts: R2MultipartOptions = {}): string {
    assertKey(key);
    assertCustomMetadata(opts.customMetadata);
    const http = cleanHttpMetadata(opts.httpMetadata);
    const storageClass = assertStorageClass(opts.storageClass);
    const uploadId = randomBytes(24).toString("base64url");
    this.q.insertUpload.run(uploadId, this.bucketId(bucket), key, JSON.stringify(http), JSON.stringify(opts.customMetadata ?? {}), storageClass, Date.now());
    return uploadId;
  }

  private requireUpload(bucket: BucketRef, key: string, uploadId: string) {
    assertKey(key);
    if (typeof uploadId !== "string" || !uploadId) throw noSuchUpload();
    const u = this.q.upload.get(uploadId, this.bucketId(bucket), key);
    if (!u) throw noSuchUpload();
    return u;
  }

  async uploadPart(bucket: BucketRef, key: string, uploadId: string, partNumber: number, body: Readable | Buffer, size?: number): Promise<R2UploadedPart> {
    try {
      this.requireUpload(bucket, key, uploadId);
      if (!Number.isInteger(partNumber) || partNumber < 1 || partNumber > R2Limits.maxParts) {
        throw new R2Error(400, R2Codes.invalidPart, `partNumber must be an integer between 1 and ${R2Limits.maxParts}`);
      }
    } catch (e) {
      if (!Buffer.isBuffer(body)) body.resume();
      throw e;
    }
    const stored = await this.storeBody(body, { size });
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
      this.content.deleteSync(stored.id);
      throw e;
    }
    if (replaced) this.discard([replaced]);
    return { partNumber, etag: stored.md5 };
  }

  async completeMultipartUpload(bucket: BucketRef, key: string, uploadId: string, parts: R2UploadedPart[]): Promise<R2ObjectInfo> {
    const upload = this.requireUpload(bucket, key, uploadId);
    if (!Array.isArray(parts) || parts.length === 0) throw new R2Error(400, R2Codes.invalidPart, "At least one part must be listed");
    const stored = new Map(this.q.parts.all(uploadId).map((p) => [p.part_number, p]));
    const segments: Segment[] = [];
    const md5s: Buffer[] = [];
    let size = 0;
    if (parts.some((p, i) => i > 0 && p.partNumber <= parts[i - 1].partNumber)) {
      throw new R2Error(400, R2Codes.invalidPart, "Parts must be listed in ascending order, each once");
    }
    parts.forEach((p, i) => {
      const s = stored.get(p.partNumber);
      if (!s || s.md5 !== String(p.etag).replace(/"/g, "")) {
        throw new R2Error(400, R2Codes.invalidPart, `Part ${p.partNumber} was not uploaded or its etag does not match`);
      }
      if (i < parts.length - 1 && s.size < R2Limits.minPartBytes) {
        throw new R2Error(
          400,
          R2Codes.entityTooSmall,
          `Part ${p.partNumber} is ${s.size} bytes; every part but the last needs at least ${R2Limits.minPartBytes}`,
        );
      }
      segments.push([s.content_id, s.size]);
      md5s.push(Buffer.from(s.md5, "hex"));
      size += s.size;
    });
    const info: R2ObjectInfo = {
      key,
      version: newVersion(),
      size,
      etag: `${createHash("md5").update(Buffer.concat(md5s)).digest("hex")}-${parts.length}`,
      uploaded: Date.now(),
      httpMetadata: JSON.parse(upload.http),
      customMetadata: JSON.parse(upload.custom),
      checksums: {},
      storageClass: upload.storage_class,
    };
    const used = new Set(segments.map(([id]) => id));
    const unused = [...stored.values()].map((p) => p.content_id).filter((id) => !used.has(id));
    this.db
      .transaction(() => {
        this.requireUpload(bucket, key, uploadId);
        this.commitObject(bucket, key, info, segments, {});
        this.q.deleteUpload.run(uploadId);
      })
      .immediate();
    this.discard(unused);
    return info;
  }

  /** Aborts multipart uploads started before `cutoff` (ms), as R2's default lifecycle does after 7 days. Returns how many. */
  abortStaleUploads(cutoff: number): number {
    let ids: string[] = [];
    let n = 0;
    this.db
      .transaction(() => {
        const stale = this.db.prepare<[number], { upload_id: string }>("SELECT upload_id FROM uploads WHERE created < ?").all(cutoff);
        for (const { upload_id } of stale) {
          ids = ids.concat(this.q.parts.all(upload_id).map((p) => p.content_id));
          this.q.deleteUpload.run(upload_id);
        }
        n = stale.length;
      })
      .immediate();
    this.discard(ids);
    return n;
  }

  async listMultipartUploads(bucket: BucketRef, opts: R2ListUploadsOptions = {}): Promise<R2ListUploadsResult> {
    return this.uploadListing.uploads(this.bucketId(bucket), opts);
  }

  async listParts(bucket: BucketRef, key: string, uploadId: string, opts: { partNumberMarker?: number; limit?: number } = {}): Promise<R2ListPartsResult> {
    return this.uploadListing.parts(uploadId, this.requireUpload(bucket, key, uploadId), opts);
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

  async abortMultipartUpload(bucket: BucketRef, key: string, uploadId: string): Promise<void> {
    let ids: string[] = [];
    this.db
      .transaction(() => {
        this.requireUpload(bucket, key, uploadId);
        ids = this.q.parts.all(uploadId).map((p) => p.content_id);
        this.q.deleteUpload.run(uploadId);
      })
      .immediate();
    this.discard(ids);
  }
}

const tooLarge = () =>
  new R2Error(400, R2Codes.entityTooLarge, `The object is larger than the ${R2Limits.maxObjectBytes} bytes a single upload may hold; use a multipart upload`);

/** Compares the digests the caller announced with the ones computed while storing; records the ones given. */
function verifyDigests(stored: StoredContent & { digests: Record<string, string> }, opts: R2PutOptions, checksums: R2Checksums): void {
  const computed: Record<string, string | undefined> = { md5: stored.md5, sha256: stored.sha256, ...stored.digests };
  for (const alg of ["md5", "sha1", "sha256", "sha384", "sha512"] as const) {
    const expected = opts[alg];
    if (expected === undefined) continue;
    if (expected.toLowerCase() !== computed[alg]) {
      throw new R2Error(400, R2Codes.invalidDigest, `The ${alg.toUpperCase()} checksum you specified did not match what we received.`);
    }
    checksums[alg] = computed[alg];
  }
}
