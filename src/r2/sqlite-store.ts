import type { Readable } from "node:stream";
import type { ContentStore } from "../core/content/store.js";
import type { Db } from "../core/db/sqlite.js";
import { R2Errors } from "./errors.js";
import { listObjects } from "./objects/listing.js";
import { MultipartDelegation } from "./multipart/delegation.js";
import { beforeBody, checkPut, drain, ObjectBodies, putObjectInfo } from "./objects/bodies.js";
import { conditionHolds } from "./objects/preconditions.js";
import { SqliteBucketCors } from "./cors/sqlite-store.js";
import { SqliteMultipart } from "./multipart/sqlite-store.js";
import { SqliteNotifications } from "./notifications/sqlite-store.js";
import { NotificationRuleIndex } from "./notifications/rules.js";
import { type NotificationAction, type NotificationRule, type OutboxMessage } from "./notifications/store.js";
import { bucketInfo, objectInfo, usageOf, type BucketRow, type ObjectRow, type Segment, type UsageRow } from "./rows.js";
import { R2Limits } from "./limits.js";
import {
  type BucketRef,
  type R2BucketInfo,
  type R2BucketUsage,
  type R2CorsRule,
  type R2GetOptions,
  type R2GetResult,
  type R2ListOptions,
  type R2ListResult,
  type R2ObjectInfo,
  type R2PutOptions,
  type R2Store,
} from "./store.js";
import { assertBucketName, assertKey, assertStorageClass } from "./validation.js";

/**
 * SQLite's page cache for the R2 connection, in KiB. better-sqlite3 builds SQLite with 16,000 KiB per connection,
 * which r2.sqlite fills after a few thousand small objects (a 4 KiB body is two pages, a leaf and an overflow page)
 * and never gives back. 2 MiB still holds every interior page of its tables; a body's own pages are one pread
 * from the OS's file cache. Measured: docs/benchmarks.md, R2 over S3.
 */
export const R2_PAGE_CACHE_KIB = 2048;

/**
 * Objects and buckets in SQLite; bytes in the content store. Every write streams the body to a new content
 * file first and then commits the row in one transaction (preconditions re-checked inside it), so a failed
 * or refused upload never leaves a partial object, and readers never see a row without its bytes. Multipart
 * uploads are kept by sqlite-multipart.ts, which completes them through the same write path.
 */
export class SqliteR2Store extends MultipartDelegation implements R2Store {
  private readonly bodies: ObjectBodies;
  private readonly cors: SqliteBucketCors;
  private readonly notifications: SqliteNotifications;
  protected readonly multipart: SqliteMultipart;
  private readonly q;

  constructor(
    private readonly db: Db,
    content: ContentStore,
    /** The rules in memory (the service's, which wakes the relay); tests may leave it out. */
    notificationIndex = new NotificationRuleIndex(),
  ) {
    super();
    this.notifications = new SqliteNotifications(db, notificationIndex);
    notificationIndex.replaceAll(this.notifications.all());
    db.pragma(`cache_size = -${R2_PAGE_CACHE_KIB}`);
    this.bodies = new ObjectBodies(content);
    this.multipart = new SqliteMultipart(db, content, {
      bucketId: (ref) => this.bucketId(ref),
      storeBody: (body, opts) => this.bodies.store(body, opts),
      commitObject: (bucket, key, info, segments) => this.commitObject(bucket, key, info, segments, { action: "CompleteMultipartUpload" }),
      discard: (ids) => this.bodies.discard(ids),
    });
    this.cors = new SqliteBucketCors(db);
    this.q = {
      // bucket_usage is kept by triggers (sqlite-migrations.ts): a row a bucket, not a pass over its objects.
      usage: db.prepare<[string, string | null, string | null], UsageRow>(
        `SELECT b.name AS bucket_name, coalesce(u.object_count, 0) AS object_count, coalesce(u.payload_size, 0) AS payload_size,
           coalesce(u.metadata_size, 0) AS metadata_size, coalesce(u.upload_count, 0) AS upload_count
         FROM buckets b LEFT JOIN bucket_usage u ON u.bucket_id = b.id WHERE b.account_id = ? AND (? IS NULL OR b.name = ?) ORDER BY b.name`,
      ),
      bucket: db.prepare<[string, string], BucketRow>("SELECT id, name, created_at, location, storage_class FROM buckets WHERE account_id = ? AND name = ?"),
      buckets: db.prepare<[string, string, string, number], BucketRow>(
        "SELECT id, name, created_at, location, storage_class FROM buckets WHERE account_id = ? AND name > ? AND instr(name, ?) > 0 ORDER BY name LIMIT ?",
      ),
      insertBucket: db.prepare("INSERT INTO buckets (account_id, name, created_at, location, storage_class) VALUES (?, ?, ?, ?, ?)"),
      deleteBucket: db.prepare("DELETE FROM buckets WHERE id = ?"),
      setBucketStorageClass: db.prepare("UPDATE buckets SET storage_class = ? WHERE account_id = ? AND name = ?"),
      bucketUsed: db.prepare<[number, number], { n: number }>(
        "SELECT (SELECT count(*) FROM (SELECT 1 FROM objects WHERE bucket_id = ? LIMIT 1)) + (SELECT count(*) FROM (SELECT 1 FROM uploads WHERE bucket_id = ? LIMIT 1)) AS n",
      ),
      object: db.prepare<[number, string], ObjectRow>("SELECT * FROM objects WHERE bucket_id = ? AND key = ?"),
      // Reads find bucket and object in one statement; the bucket is looked up alone only when no row came back.
      objectByBucketName: db.prepare<[string, string, string], ObjectRow>(
        "SELECT o.* FROM buckets b JOIN objects o ON o.bucket_id = b.id WHERE b.account_id = ? AND b.name = ? AND o.key = ?",
      ),
      upsertObject: db.prepare(
        `INSERT INTO objects (bucket_id, key, version, size, etag, uploaded, http, custom, checksums, storage_class, segments)
         VALUES (@bucketId, @key, @version, @size, @etag, @uploaded, @http, @custom, @checksums, @storageClass, @segments)
         ON CONFLICT (bucket_id, key) DO UPDATE SET version = excluded.version, size = excluded.size, etag = excluded.etag,
           uploaded = excluded.uploaded, http = excluded.http, custom = excluded.custom, checksums = excluded.checksums,
           storage_class = excluded.storage_class, segments = excluded.segments`,
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

  async setBucketStorageClass(accountId: string, name: string, storageClass: string): Promise<R2BucketInfo> {
    const cls = assertStorageClass(storageClass);
    if (this.q.setBucketStorageClass.run(cls, accountId, name).changes === 0) throw R2Errors.bucketNotFound();
    return bucketInfo(this.q.bucket.get(accountId, name)!);
  }

  async listBuckets(accountId: string, opts: { nameContains?: string; startAfter?: string; limit?: number } = {}): Promise<R2BucketInfo[]> {
    return this.q.buckets.all(accountId, opts.startAfter ?? "", opts.nameContains ?? "", opts.limit ?? -1).map(bucketInfo);
  }

  async bucketUsage(accountId: string, bucketName?: string): Promise<R2BucketUsage[]> {
    return this.q.usage.all(accountId, bucketName ?? null, bucketName ?? null).map(usageOf);
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
    // Its rules went with it (ON DELETE CASCADE).
    this.notifications.index.set({ accountId, bucketName: name }, []);
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
    return row && this.bodies.read(objectInfo(row), JSON.parse(row.segments), opts);
  }

  async put(bucket: BucketRef, key: string, body: Readable | Buffer, opts: R2PutOptions = {}): Promise<R2ObjectInfo | undefined> {
    const { httpMetadata, bucketId } = await beforeBody(body, () => ({ httpMetadata: checkPut(key, opts), bucketId: this.bucketId(bucket) }));
    // Refuse early when the precondition already fails, without storing the body; it is checked again at commit.
    if (opts.onlyIf && !conditionHolds(opts.onlyIf, this.q.object.get(bucketId, key))) return drain(body);
    const stored = await this.bodies.store(body, opts);
    try {
      const info = putObjectInfo(key, stored, opts, httpMetadata);
      const action: NotificationAction = opts.copySource ? "CopyObject" : "PutObject";
      const committed = this.commitObject(bucket, key, info, [[stored.id, stored.size]], { onlyIf: opts.onlyIf, action, copySource: opts.copySource });
      if (!committed) await this.bodies.forget(stored.id);
      return committed ? info : undefined;
    } catch (e) {
      await this.bodies.forget(stored.id);
      throw e;
    }
  }

  /**
   * Replaces the row in one transaction if the bucket still exists and the precondition still holds; the event
   * notifications of the change are recorded by the same transaction.
   */
  private commitObject(
    bucket: BucketRef,
    key: string,
    info: R2ObjectInfo,
    segments: Segment[],
    opts: { onlyIf?: R2PutOptions["onlyIf"]; action: NotificationAction; copySource?: R2PutOptions["copySource"] },
  ): boolean {
    let old: Segment[] | undefined;
    let recorded = false;
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
        recorded = this.notifications.record({ bucket, action: opts.action, key, object: info, copySource: opts.copySource });
        return true;
      })
      .immediate();
    if (old) this.bodies.discard(old.map(([id]) => id));
    if (recorded) this.notifications.index.onRecorded();
    return ok;
  }

  async delete(bucket: BucketRef, keys: string | string[]): Promise<void> {
    const list = typeof keys === "string" ? [keys] : keys;
    if (list.length > R2Limits.maxDeleteKeys) throw R2Errors.tooManyKeys();
    list.forEach(assertKey);
    const removed: string[] = [];
    let recorded = false;
    this.db
      .transaction(() => {
        const bucketId = this.bucketId(bucket);
        for (const key of list) {
          const r = this.q.deleteObject.get(bucketId, key);
          if (!r) continue;
          for (const [id] of JSON.parse(r.segments) as Segment[]) removed.push(id);
          if (this.notifications.record({ bucket, action: "DeleteObject", key })) recorded = true;
        }
      })
      .immediate();
    this.bodies.discard(removed);
    if (recorded) this.notifications.index.onRecorded();
  }

  async list(bucket: BucketRef, opts: R2ListOptions = {}): Promise<R2ListResult> {
    const bucketId = this.bucketId(bucket);
    return listObjects((from, inclusive, n) => (inclusive ? this.q.listFrom : this.q.listAfter).all(bucketId, from, n), opts);
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

  // ---- event notifications ----

  async notificationRules(bucket: BucketRef): Promise<NotificationRule[]> {
    return this.notifications.rules(this.bucketId(bucket));
  }

  async allNotificationRules(): Promise<{ bucket: BucketRef; rules: NotificationRule[] }[]> {
    return this.notifications.all();
  }

  async addNotificationRules(bucket: BucketRef, rules: NotificationRule[]): Promise<void> {
    this.notifications.add(bucket, () => this.bucketId(bucket), rules);
  }

  async deleteNotificationRules(bucket: BucketRef, queueId: string, ruleIds?: readonly string[]): Promise<number> {
    return this.notifications.delete(bucket, () => this.bucketId(bucket), queueId, ruleIds);
  }

  async deleteQueueNotificationRules(accountId: string, queueId: string): Promise<number> {
    return this.notifications.deleteQueue(accountId, queueId);
  }

  async leaseNotifications(max: number, leaseMs: number, nowMs: number): Promise<OutboxMessage[]> {
    return this.notifications.lease(max, leaseMs, nowMs);
  }

  async ackNotifications(ids: readonly string[]): Promise<void> {
    this.notifications.ack(ids);
  }
}
