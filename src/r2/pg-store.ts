import type { Readable } from "node:stream";
import type { ContentStore } from "../core/content/store.js";
import { namedStatement, type Postgres, type SqlRunner, type Transaction } from "../core/db/postgres.js";
import { R2Errors } from "./errors.js";
import { R2BodyPolicy } from "./objects/body-policy.js";
import { listObjects } from "./objects/listing.js";
import { MultipartDelegation } from "./multipart/delegation.js";
import { beforeBody, checkPut, drain, ObjectBodies, putObjectInfo, wholeIfSmall } from "./objects/bodies.js";
import { PgBucketCors } from "./cors/pg-store.js";
import { PgMultipart } from "./multipart/pg-store.js";
import { PgNotifications } from "./notifications/pg-store.js";
import { NotificationRuleIndex, type ObjectWrite } from "./notifications/rules.js";
import { type NotificationRule, type OutboxMessage } from "./notifications/store.js";
import type { Bus } from "../core/cluster/bus.js";
import { assertPgText } from "./validation.js";
import { conditionHolds } from "./objects/preconditions.js";
import { bucketInfo, objectInfo, usageOf, type BucketRow, type ObjectRow, type Segment, type UsageRow } from "./rows.js";
import { R2Limits } from "./limits.js";
import {
  type BucketRef,
  type R2BucketInfo,
  type R2BucketUsage,
  type R2Conditional,
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

/** The columns of an object row, as ObjectRow has them (BIGINTs as numbers: sizes and ms stay far below 2^53). */
const OBJECT_COLUMNS =
  "o.key, o.version, o.size::float8 AS size, o.etag, o.uploaded::float8 AS uploaded, o.http, o.custom, o.checksums, o.storage_class, o.segments";

/** What the store's own statements need of a bucket: its row id (a BIGSERIAL, as text). */
type BucketId = string;

const OBJECT_ROW = namedStatement(
  "r2.object_row",
  `SELECT ${OBJECT_COLUMNS} FROM r2.buckets b JOIN r2.objects o ON o.bucket_id = b.id WHERE b.account_id = $1 AND b.name = $2 AND o.key = $3`,
);
/** The row and, for a small object, its bytes (null for a body in the content store). */
const OBJECT_WITH_BODY = namedStatement(
  "r2.object_with_body",
  `SELECT ${OBJECT_COLUMNS}, o.body FROM r2.buckets b JOIN r2.objects o ON o.bucket_id = b.id WHERE b.account_id = $1 AND b.name = $2 AND o.key = $3`,
);
const PUT_OBJECT = namedStatement("r2.put_object", "SELECT bucket_found, replaced FROM r2.put_object($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)");

type RowWithBody = ObjectRow & { body: Buffer | null };

/** How long a bucket seen to exist spares an unconditional put its check before the body is stored (the commit checks again). */
const BUCKET_SEEN_MS = 10_000;
const BUCKETS_SEEN_MAX = 10_000;

/** An object row's columns after (bucket, key), in the order r2.objects and r2.put_object take them. */
function objectValues(info: R2ObjectInfo, segments: Segment[], body: Buffer | null): unknown[] {
  return [
    info.version,
    info.size,
    info.etag,
    info.uploaded,
    JSON.stringify(info.httpMetadata),
    JSON.stringify(info.customMetadata),
    JSON.stringify(info.checksums),
    info.storageClass,
    JSON.stringify(segments),
    body,
  ];
}

/**
 * Objects and buckets on PostgreSQL (schema `r2`, R2_PG_MIGRATIONS); bytes up to R2BodyPolicy.rowBytes in the object's
 * row, larger ones in the content store (an S3 bucket in distributed mode). A body in the row is written and removed
 * with it, by the same statement. Otherwise, as on SQLite, every write stores the body first and then commits the row in one transaction
 * (preconditions re-checked inside it, under a per-key advisory lock so that two nodes writing the same key take
 * turns), so a failed or refused upload never leaves a partial object and no node reads a row without its bytes.
 * Content a committed change no longer names is removed after the commit (after this node's readers of it).
 * Multipart uploads are kept by pg-multipart.ts, which completes them through the same commit.
 */
export class PgR2Store extends MultipartDelegation implements R2Store {
  private readonly bodies: ObjectBodies;
  private readonly cors: PgBucketCors;
  readonly notifications: PgNotifications;
  protected readonly multipart: PgMultipart;
  /**
   * Buckets (account, name) seen to exist lately, until when. Only a hint: a put of a bucket deleted meanwhile stores
   * its body, then the commit finds no bucket, answers 404 and removes the body.
   */
  private readonly bucketsSeen = new Map<string, number>();

  constructor(
    private readonly pg: Postgres,
    content: ContentStore,
    /** The rules in memory (the service's; it loads them, and reloads them on other nodes' notices). */
    notificationIndex = new NotificationRuleIndex(),
    bus?: Bus,
  ) {
    super();
    this.notifications = new PgNotifications(pg, notificationIndex, bus);
    this.bodies = new ObjectBodies(content);
    this.cors = new PgBucketCors(pg);
    this.multipart = new PgMultipart(pg, this.bodies, {
      bucketId: (on, ref, lock) => this.bucketId(on, ref, lock),
      commitObject: (tx, bucketId, key, info, segments, onlyIf, notify) => this.commitObject(tx, bucketId, key, info, segments, onlyIf, notify),
    });
  }

  async liveContent(): Promise<Set<string>> {
    const rows = await this.pg.rows<{ id: string }>(
      "SELECT DISTINCT s->>0 AS id FROM r2.objects, jsonb_array_elements(segments::jsonb) AS s UNION SELECT content_id FROM r2.parts",
    );
    return new Set(rows.map((r) => r.id));
  }

  // ---- buckets ----

  async createBucket(accountId: string, name: string, opts: { location?: string; storageClass?: string } = {}): Promise<R2BucketInfo> {
    assertBucketName(name);
    const storageClass = assertStorageClass(opts.storageClass);
    const location = (opts.location ?? "auto").toLowerCase();
    const createdAt = new Date().toISOString();
    const inserted = await this.pg.execute(
      "INSERT INTO r2.buckets (account_id, name, created_at, location, storage_class) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (account_id, name) DO NOTHING",
      [accountId, name, createdAt, location, storageClass],
    );
    if (inserted === 0) throw R2Errors.bucketAlreadyExists();
    return { name, creationDate: createdAt, location, storageClass };
  }

  async bucketUsage(accountId: string, bucketName?: string): Promise<R2BucketUsage[]> {
    const rows = await this.pg.rows<UsageRow>(
      // r2.bucket_usage is kept by triggers (pg-migrations.ts, versions 5 and 6): a few stripe rows a bucket, summed,
      // not a pass over its objects.
      `SELECT b.name AS bucket_name, coalesce(u.object_count, 0) AS object_count, coalesce(u.payload_size, 0) AS payload_size,
         coalesce(u.metadata_size, 0) AS metadata_size, coalesce(u.upload_count, 0) AS upload_count
       FROM r2.buckets b LEFT JOIN LATERAL (
         SELECT sum(object_count)::bigint AS object_count, sum(payload_size)::bigint AS payload_size,
           sum(metadata_size)::bigint AS metadata_size, sum(upload_count)::bigint AS upload_count
         FROM r2.bucket_usage WHERE bucket_id = b.id
       ) u ON true
       WHERE b.account_id = $1 AND ($2::text IS NULL OR b.name = $2) ORDER BY b.name`,
      [accountId, bucketName ?? null],
    );
    return rows.map(usageOf);
  }

  async getBucket(accountId: string, name: string): Promise<R2BucketInfo | undefined> {
    const r = await this.pg.row<BucketRow>("SELECT id, name, created_at, location, storage_class FROM r2.buckets WHERE account_id = $1 AND name = $2", [
      accountId,
      name,
    ]);
    return r && bucketInfo(r);
  }

  async setBucketStorageClass(accountId: string, name: string, storageClass: string): Promise<R2BucketInfo> {
    const cls = assertStorageClass(storageClass);
    const r = await this.pg.row<BucketRow>(
      "UPDATE r2.buckets SET storage_class = $1 WHERE account_id = $2 AND name = $3 RETURNING id, name, created_at, location, storage_class",
      [cls, accountId, name],
    );
    if (!r) throw R2Errors.bucketNotFound();
    return bucketInfo(r);
  }

  async listBuckets(accountId: string, opts: { nameContains?: string; startAfter?: string; limit?: number } = {}): Promise<R2BucketInfo[]> {
    assertPgText(opts.nameContains, opts.startAfter);
    const rows = await this.pg.rows<BucketRow>(
      "SELECT id, name, created_at, location, storage_class FROM r2.buckets WHERE account_id = $1 AND name > $2 AND strpos(name, $3) > 0 ORDER BY name LIMIT $4",
      [accountId, opts.startAfter ?? "", opts.nameContains ?? "", opts.limit ?? null],
    );
    return rows.map(bucketInfo);
  }

  async deleteBucket(accountId: string, name: string): Promise<void> {
    await this.pg.withTransaction(async (tx) => {
      const id = await this.bucketId(tx, { accountId, bucketName: name }, "FOR UPDATE");
      const used = await tx.row("SELECT 1 FROM r2.objects WHERE bucket_id = $1 UNION ALL SELECT 1 FROM r2.uploads WHERE bucket_id = $1 LIMIT 1", [id]);
      if (used) throw R2Errors.bucketNotEmpty();
      await tx.execute("DELETE FROM r2.buckets WHERE id = $1", [id]);
      // Its rules went with it (ON DELETE CASCADE); other nodes drop them from their index.
      await this.notifications.bucketDeleted({ accountId, bucketName: name }, tx);
    });
    this.bucketsSeen.delete(`${accountId}/${name}`);
    this.notifications.index.set({ accountId, bucketName: name }, []);
  }

  /**
   * The bucket's row id; refuses a bucket that does not exist. Inside a transaction, `lock` keeps the bucket from
   * being deleted until it ends ("FOR KEY SHARE", what a write into the bucket takes) or is the delete's own lock.
   */
  private async bucketId(on: SqlRunner, ref: BucketRef, lock?: "FOR KEY SHARE" | "FOR UPDATE"): Promise<BucketId> {
    const b = await on.row<{ id: string }>(`SELECT id FROM r2.buckets WHERE account_id = $1 AND name = $2 ${lock ?? ""}`, [ref.accountId, ref.bucketName]);
    if (!b) throw R2Errors.bucketNotFound();
    return b.id;
  }

  // ---- objects ----

  /** The object's row (by `query`: with its body or not); undefined when there is none; throws when the bucket does not exist. */
  private async objectRow<R extends ObjectRow = ObjectRow>(bucket: BucketRef, key: string, query = OBJECT_ROW): Promise<R | undefined> {
    assertKey(key);
    assertPgText(key);
    const row = await this.pg.row<R>(query, [bucket.accountId, bucket.bucketName, key]);
    if (!row) await this.bucketId(this.pg, bucket);
    this.sawBucket(bucket);
    return row;
  }

  private sawBucket(bucket: BucketRef): void {
    if (this.bucketsSeen.size >= BUCKETS_SEEN_MAX) this.bucketsSeen.clear();
    this.bucketsSeen.set(`${bucket.accountId}/${bucket.bucketName}`, Date.now() + BUCKET_SEEN_MS);
  }

  /** Refuses a bucket that does not exist, unless it was seen lately. */
  private async assertBucket(bucket: BucketRef): Promise<void> {
    if ((this.bucketsSeen.get(`${bucket.accountId}/${bucket.bucketName}`) ?? 0) > Date.now()) return;
    await this.bucketId(this.pg, bucket);
    this.sawBucket(bucket);
  }

  async head(bucket: BucketRef, key: string): Promise<R2ObjectInfo | undefined> {
    const r = await this.objectRow(bucket, key);
    return r && objectInfo(r);
  }

  async get(bucket: BucketRef, key: string, opts: R2GetOptions = {}): Promise<R2GetResult | undefined> {
    const row = await this.objectRow<RowWithBody>(bucket, key, OBJECT_WITH_BODY);
    return row && this.bodies.read(objectInfo(row), JSON.parse(row.segments), opts, row.body ?? undefined);
  }

  async put(bucket: BucketRef, key: string, body: Readable | Buffer, opts: R2PutOptions = {}): Promise<R2ObjectInfo | undefined> {
    // A bucket with notification rules takes the transaction below: its messages are recorded by the same commit.
    if (!opts.onlyIf && !this.notifications.index.hasRules(bucket)) return this.putUnconditionally(bucket, key, body, opts);
    const { httpMetadata, current } = await beforeBody(body, async () => ({ httpMetadata: checkPut(key, opts), current: await this.objectRow(bucket, key) }));
    // Refuse early when the precondition already fails, without storing the body; it is checked again at commit.
    if (opts.onlyIf && !conditionHolds(opts.onlyIf, current)) return drain(body);
    const notify: ObjectWrite = { bucket, action: opts.copySource ? "CopyObject" : "PutObject", copySource: opts.copySource };
    let recorded = false;
    body = await wholeIfSmall(body, opts.size, R2BodyPolicy.rowBytes);
    const held = await this.bodies.hold(body, opts, R2BodyPolicy.rowBytes);
    const stored = held ? undefined : await this.bodies.store(body, opts);
    const forgetStored = async () => {
      if (stored) await this.bodies.forget(stored.id);
    };
    let old: Segment[] | undefined;
    try {
      const info = putObjectInfo(key, held ?? stored!, opts, httpMetadata);
      const committed = await this.pg.withTransaction(async (tx) => {
        const bucketId = await this.bucketId(tx, bucket, "FOR KEY SHARE");
        const replaced = await this.commitObject(tx, bucketId, key, info, stored ? [[stored.id, stored.size]] : [], opts.onlyIf, notify, held?.bytes);
        old = replaced || undefined;
        recorded = replaced !== false && this.notifications.index.hasRules(bucket);
        return replaced !== false;
      });
      if (recorded) this.notifications.index.onRecorded();
      if (!committed) await forgetStored();
      else if (old) this.bodies.discard(old.map(([id]) => id));
      return committed ? info : undefined;
    } catch (e) {
      await forgetStored().catch(() => undefined);
      throw e;
    }
  }

  /**
   * A put without precondition: one statement (r2.put_object) that commits the row, with the body in it when it is
   * small; a larger body is stored in the content store first.
   */
  private async putUnconditionally(bucket: BucketRef, key: string, body: Readable | Buffer, opts: R2PutOptions): Promise<R2ObjectInfo> {
    const httpMetadata = await beforeBody(body, async () => {
      const checked = checkPut(key, opts);
      assertPgText(key);
      await this.assertBucket(bucket);
      return checked;
    });
    body = await wholeIfSmall(body, opts.size, R2BodyPolicy.rowBytes);
    const held = await this.bodies.hold(body, opts, R2BodyPolicy.rowBytes);
    if (held) return this.commitUnconditionally(bucket, key, putObjectInfo(key, held, opts, httpMetadata), [], held.bytes);
    const stored = await this.bodies.store(body, opts);
    try {
      return await this.commitUnconditionally(bucket, key, putObjectInfo(key, stored, opts, httpMetadata), [[stored.id, stored.size]], null);
    } catch (e) {
      await this.bodies.forget(stored.id).catch(() => undefined);
      throw e;
    }
  }

  private async commitUnconditionally(bucket: BucketRef, key: string, info: R2ObjectInfo, segments: Segment[], body: Buffer | null): Promise<R2ObjectInfo> {
    const result = (await this.pg.row<{ bucket_found: boolean; replaced: string | null }>(PUT_OBJECT, [
      bucket.accountId,
      bucket.bucketName,
      key,
      ...objectValues(info, segments, body),
    ]))!;
    if (!result.bucket_found) {
      this.bucketsSeen.delete(`${bucket.accountId}/${bucket.bucketName}`);
      throw R2Errors.bucketNotFound();
    }
    // A replaced body in the row went with it; one in the content store is removed now (after this node's readers).
    if (result.replaced) this.bodies.discard((JSON.parse(result.replaced) as Segment[]).map(([id]) => id));
    return info;
  }

  /**
   * Replaces the object's row inside `tx` (the bucket locked by the caller) if the precondition still holds: under
   * an advisory lock on (bucket, key), so that concurrent writers of one key, on any node, take turns. Returns the
   * segments of the object replaced (null when there was none), or false when the precondition failed. `body`: the
   * bytes of a small object, kept in the row (then `segments` is empty). The change's event notifications
   * (`notify`) are recorded in `tx` too.
   */
  private async commitObject(
    tx: Transaction,
    bucketId: BucketId,
    key: string,
    info: R2ObjectInfo,
    segments: Segment[],
    onlyIf: R2Conditional | undefined,
    notify: ObjectWrite,
    body: Buffer | null = null,
  ): Promise<Segment[] | null | false> {
    await tx.execute("SELECT pg_advisory_xact_lock(hashtextextended($2, $1))", [bucketId, key]);
    const current = await tx.row<ObjectRow>(`SELECT ${OBJECT_COLUMNS} FROM r2.objects o WHERE o.bucket_id = $1 AND o.key = $2`, [bucketId, key]);
    if (onlyIf && !conditionHolds(onlyIf, current && objectInfo(current))) return false;
    await tx.execute(
      `INSERT INTO r2.objects (bucket_id, key, version, size, etag, uploaded, http, custom, checksums, storage_class, segments, body)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
       ON CONFLICT (bucket_id, key) DO UPDATE SET version = excluded.version, size = excluded.size, etag = excluded.etag,
         uploaded = excluded.uploaded, http = excluded.http, custom = excluded.custom, checksums = excluded.checksums,
         storage_class = excluded.storage_class, segments = excluded.segments, body = excluded.body`,
      [bucketId, key, ...objectValues(info, segments, body)],
    );
    await this.notifications.record(tx, { ...notify, key, object: info });
    return current ? (JSON.parse(current.segments) as Segment[]) : null;
  }

  async delete(bucket: BucketRef, keys: string | string[]): Promise<void> {
    const list = typeof keys === "string" ? [keys] : keys;
    if (list.length > R2Limits.maxDeleteKeys) throw R2Errors.tooManyKeys();
    list.forEach(assertKey);
    assertPgText(...list);
    let recorded = false;
    const removed = await this.pg.withTransaction(async (tx) => {
      const bucketId = await this.bucketId(tx, bucket, "FOR KEY SHARE");
      const rows = await tx.rows<{ key: string; segments: string }>(
        "DELETE FROM r2.objects WHERE bucket_id = $1 AND key = ANY($2::text[]) RETURNING key, segments",
        [bucketId, list],
      );
      for (const r of rows) if (await this.notifications.record(tx, { bucket, action: "DeleteObject", key: r.key })) recorded = true;
      return rows.flatMap((r) => (JSON.parse(r.segments) as Segment[]).map(([id]) => id));
    });
    this.bodies.discard(removed);
    if (recorded) this.notifications.index.onRecorded();
  }

  async list(bucket: BucketRef, opts: R2ListOptions = {}): Promise<R2ListResult> {
    assertPgText(opts.prefix, opts.delimiter, opts.startAfter);
    const bucketId = await this.bucketId(this.pg, bucket);
    return listObjects((from, inclusive, n) => {
      // A cursor is decoded by listObjects: a forged one may hold U+0000, which no key holds.
      assertPgText(from);
      return this.pg.rows<ObjectRow>(
        `SELECT ${OBJECT_COLUMNS} FROM r2.objects o WHERE o.bucket_id = $1 AND o.key ${inclusive ? ">=" : ">"} $2 ORDER BY o.key LIMIT $3`,
        [bucketId, from, n],
      );
    }, opts);
  }

  // ---- bucket CORS ----

  async getBucketCors(bucket: BucketRef): Promise<R2CorsRule[] | undefined> {
    return this.cors.get(await this.bucketId(this.pg, bucket));
  }

  async putBucketCors(bucket: BucketRef, rules: R2CorsRule[]): Promise<void> {
    await this.pg.withTransaction(async (tx) => this.cors.put(tx, await this.bucketId(tx, bucket, "FOR KEY SHARE"), rules));
  }

  async deleteBucketCors(bucket: BucketRef): Promise<void> {
    await this.cors.delete(await this.bucketId(this.pg, bucket));
  }

  async corsRulesByBucketName(name: string): Promise<{ accountId: string; rules: R2CorsRule[] }[]> {
    assertPgText(name);
    return this.cors.byName(name);
  }

  // ---- event notifications ----

  async notificationRules(bucket: BucketRef): Promise<NotificationRule[]> {
    return this.notifications.rules(this.pg, await this.bucketId(this.pg, bucket));
  }

  async allNotificationRules(): Promise<{ bucket: BucketRef; rules: NotificationRule[] }[]> {
    return this.notifications.all();
  }

  async addNotificationRules(bucket: BucketRef, rules: NotificationRule[]): Promise<void> {
    await this.notifications.add(bucket, (tx) => this.bucketId(tx, bucket, "FOR UPDATE"), rules);
  }

  async deleteNotificationRules(bucket: BucketRef, queueId: string, ruleIds?: readonly string[]): Promise<number> {
    return this.notifications.delete(bucket, (tx) => this.bucketId(tx, bucket, "FOR UPDATE"), queueId, ruleIds);
  }

  async deleteQueueNotificationRules(accountId: string, queueId: string): Promise<number> {
    return this.notifications.deleteQueue(accountId, queueId);
  }

  async leaseNotifications(max: number, leaseMs: number, nowMs: number): Promise<OutboxMessage[]> {
    return this.notifications.lease(max, leaseMs, nowMs);
  }

  async ackNotifications(ids: readonly string[]): Promise<void> {
    await this.notifications.ack(ids);
  }
}
