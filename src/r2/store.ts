import type { Readable } from "node:stream";
import type { NotificationRule, OutboxMessage } from "./notifications/store.js";

/**
 * The R2 object store's contract, shared by the v4 API, the CLI's server side and the workerd binding
 * backend. Buckets belong to an account; objects are addressed by (account, bucket, key). Bodies are
 * streams that go straight into the content store, so object size never drives memory use.
 */

/** Which bucket an operation acts on. */
export interface BucketRef {
  accountId: string;
  bucketName: string;
}

export interface R2BucketInfo {
  name: string;
  /** ISO 8601 */
  creationDate: string;
  location: string;
  storageClass: string;
}

/** The HTTP headers an object is served with. cacheExpiry is ms since the epoch. */
export interface R2HttpMetadata {
  contentType?: string;
  contentLanguage?: string;
  contentDisposition?: string;
  contentEncoding?: string;
  cacheControl?: string;
  cacheExpiry?: number;
}

/** Hex digests. md5 is always present for single-part objects; the others only when given at upload. */
export interface R2Checksums {
  md5?: string;
  sha1?: string;
  sha256?: string;
  sha384?: string;
  sha512?: string;
}

export interface R2ObjectInfo {
  key: string;
  version: string;
  size: number;
  /** MD5 hex, or for multipart uploads md5(concatenated part md5s) + "-<parts>"; never quoted. */
  etag: string;
  /** ms since the epoch */
  uploaded: number;
  httpMetadata: R2HttpMetadata;
  customMetadata: Record<string, string>;
  checksums: R2Checksums;
  storageClass: string;
}

export type R2EtagCondition = { type: "wildcard" } | { type: "strong" | "weak"; value: string };

/** Preconditions, with RFC 7232 semantics. Dates are ms since the epoch. */
export interface R2Conditional {
  etagMatches?: R2EtagCondition[];
  etagDoesNotMatch?: R2EtagCondition[];
  uploadedBefore?: number;
  uploadedAfter?: number;
  /** Compare dates truncated to whole seconds (what HTTP date headers can express). */
  secondsGranularity?: boolean;
}

export type R2Range = { offset: number; length?: number } | { suffix: number };

export interface R2GetOptions {
  range?: R2Range;
  onlyIf?: R2Conditional;
}

export type R2GetResult =
  /** The object and its bytes (only the range asked for). */
  | {
      object: R2ObjectInfo;
      /** When `bytes` is set, each read of `body` makes a new stream of them: read it once, or use `bytes`. */
      body: Readable;
      range: { offset: number; length: number };
      /** The same bytes already in memory (small objects: a row of r2.sqlite, or a recently read body), for callers that can skip the stream. */
      bytes?: Buffer;
    }
  /** A precondition failed: metadata only. */
  | { object: R2ObjectInfo; body: undefined; preconditionFailed: true };

export interface R2PutOptions {
  httpMetadata?: R2HttpMetadata;
  customMetadata?: Record<string, string>;
  onlyIf?: R2Conditional;
  /** Expected digests: md5 in hex; the others in hex. A mismatch is refused (R2Errors.digestMismatch). */
  md5?: string;
  sha1?: string;
  sha256?: string;
  sha384?: string;
  sha512?: string;
  storageClass?: string;
  /** The body length announced by the caller; a body of another length is refused. */
  size?: number;
  /** The object this put copies (S3's CopyObject): its event notification is then a CopyObject one. */
  copySource?: { bucket: string; key: string };
}

export type R2Include = "httpMetadata" | "customMetadata";

export interface R2ListOptions {
  prefix?: string;
  delimiter?: string;
  cursor?: string;
  startAfter?: string;
  /** 1..1000, default 1000. Counts objects and delimited prefixes together. */
  limit?: number;
  include?: R2Include[];
}

export interface R2ListResult {
  /** Objects; httpMetadata/customMetadata are empty unless asked for with `include`. */
  objects: R2ObjectInfo[];
  delimitedPrefixes: string[];
  truncated: boolean;
  cursor?: string;
}

export interface R2MultipartOptions {
  httpMetadata?: R2HttpMetadata;
  customMetadata?: Record<string, string>;
  storageClass?: string;
}

export interface R2UploadedPart {
  partNumber: number;
  etag: string;
}

/**
 * One CORS rule of a bucket (what S3's PutBucketCors sets): a browser request from a matching origin, with a
 * matching method and only allowed headers, gets the CORS answer headers. Patterns may hold one `*`.
 */
export interface R2CorsRule {
  id?: string;
  allowedOrigins: string[];
  /** GET, PUT, POST, DELETE, HEAD */
  allowedMethods: string[];
  allowedHeaders: string[];
  exposeHeaders: string[];
  maxAgeSeconds?: number;
}

/** What a bucket holds: its objects, their bytes, the bytes of their metadata, and unfinished multipart uploads. */
export interface R2BucketUsage {
  bucketName: string;
  objectCount: number;
  /** The objects' bodies, in bytes. */
  payloadSize: number;
  /** The objects' HTTP and custom metadata, in bytes (as stored, JSON). */
  metadataSize: number;
  uploadCount: number;
}

/** A multipart upload that was created and neither completed nor aborted yet. */
export interface R2PendingUpload {
  key: string;
  uploadId: string;
  /** ms since the epoch */
  initiated: number;
  storageClass: string;
}

export interface R2ListUploadsOptions {
  prefix?: string;
  delimiter?: string;
  /** Uploads of keys after this one, or of this key with an upload id after `uploadIdMarker`. */
  keyMarker?: string;
  uploadIdMarker?: string;
  /** 1..1000, default 1000; uploads and delimited prefixes count together. */
  limit?: number;
}

export interface R2ListUploadsResult {
  uploads: R2PendingUpload[];
  delimitedPrefixes: string[];
  truncated: boolean;
  /** Where the next page starts, when truncated. */
  nextKeyMarker?: string;
  nextUploadIdMarker?: string;
}

export interface R2PartInfo {
  partNumber: number;
  etag: string;
  size: number;
  /** ms since the epoch */
  uploaded: number;
}

export interface R2ListPartsResult {
  parts: R2PartInfo[];
  truncated: boolean;
  nextPartNumberMarker?: number;
  storageClass: string;
  /** ms since the epoch */
  initiated: number;
}

/**
 * Every method touches storage and returns a Promise, so a database server can implement it. Refusals are
 * R2Errors (errors.ts), raised by the store itself.
 */
export interface R2Store {
  createBucket(accountId: string, name: string, opts?: { location?: string; storageClass?: string }): Promise<R2BucketInfo>;
  getBucket(accountId: string, name: string): Promise<R2BucketInfo | undefined>;
  /** Changes the bucket's default storage class (refused when unknown); bucketNotFound when there is no such bucket. */
  setBucketStorageClass(accountId: string, name: string, storageClass: string): Promise<R2BucketInfo>;
  listBuckets(accountId: string, opts?: { nameContains?: string; startAfter?: string; limit?: number }): Promise<R2BucketInfo[]>;
  /** Refused (409, bucketNotEmpty) while the bucket holds objects or unfinished multipart uploads. */
  deleteBucket(accountId: string, name: string): Promise<void>;
  /**
   * What the account's buckets (or the one named) hold now, by bucket name: the analytics storage dataset's numbers.
   * Counted from the object rows, so it costs a pass over the bucket's rows.
   */
  bucketUsage(accountId: string, bucketName?: string): Promise<R2BucketUsage[]>;

  head(bucket: BucketRef, key: string): Promise<R2ObjectInfo | undefined>;
  /** undefined when the object does not exist. */
  get(bucket: BucketRef, key: string, opts?: R2GetOptions): Promise<R2GetResult | undefined>;
  /** The stored object, or undefined when a precondition failed (nothing written). */
  put(bucket: BucketRef, key: string, body: Readable | Buffer, opts?: R2PutOptions): Promise<R2ObjectInfo | undefined>;
  /** Deleting a key that does not exist is not an error. */
  delete(bucket: BucketRef, keys: string | string[]): Promise<void>;
  list(bucket: BucketRef, opts?: R2ListOptions): Promise<R2ListResult>;

  createMultipartUpload(bucket: BucketRef, key: string, opts?: R2MultipartOptions): Promise<string>;
  uploadPart(bucket: BucketRef, key: string, uploadId: string, partNumber: number, body: Readable | Buffer, size?: number): Promise<R2UploadedPart>;
  completeMultipartUpload(bucket: BucketRef, key: string, uploadId: string, parts: R2UploadedPart[]): Promise<R2ObjectInfo>;
  abortMultipartUpload(bucket: BucketRef, key: string, uploadId: string): Promise<void>;
  /** Unfinished uploads of a bucket in (key, upload id) order, grouped by `delimiter` like a listing. */
  listMultipartUploads(bucket: BucketRef, opts?: R2ListUploadsOptions): Promise<R2ListUploadsResult>;
  /** The parts stored so far, by part number, after `partNumberMarker`; at most `limit` (1..1000, default 1000). */
  listParts(bucket: BucketRef, key: string, uploadId: string, opts?: { partNumberMarker?: number; limit?: number }): Promise<R2ListPartsResult>;

  /** The bucket's CORS rules; undefined when none are set. */
  getBucketCors(bucket: BucketRef): Promise<R2CorsRule[] | undefined>;
  /** Replaces the bucket's CORS rules (1..100 of them). */
  putBucketCors(bucket: BucketRef, rules: R2CorsRule[]): Promise<void>;
  deleteBucketCors(bucket: BucketRef): Promise<void>;
  /**
   * The CORS rules of every bucket called `name`, whatever its account: a browser's preflight carries no
   * credentials, so when its URL names no account this is all there is to go on.
   */
  corsRulesByBucketName(name: string): Promise<{ accountId: string; rules: R2CorsRule[] }[]>;

  // ---- event notifications (notifications/rules.ts) ----
  /** The bucket's rules, every queue's, oldest first. */
  notificationRules(bucket: BucketRef): Promise<NotificationRule[]>;
  /** Every bucket's rules (to fill the in-memory index). */
  allNotificationRules(): Promise<{ bucket: BucketRef; rules: NotificationRule[] }[]>;
  /** Adds rules (made by newRules) to the bucket; refused when the bucket would pass 100 or two rules overlap. */
  addNotificationRules(bucket: BucketRef, rules: NotificationRule[]): Promise<void>;
  /** Removes the queue's rules of the bucket (only those of `ruleIds` when given); returns how many. */
  deleteNotificationRules(bucket: BucketRef, queueId: string, ruleIds?: readonly string[]): Promise<number>;
  /** Removes every rule, of any bucket of the account, that sends to the queue (the queue is being deleted). */
  deleteQueueNotificationRules(accountId: string, queueId: string): Promise<number>;
  /**
   * Leases up to `max` recorded messages, oldest first, none leased by someone else until `nowMs + leaseMs`: the
   * relay moves them to their queues and then removes them (ackNotifications). A lease that ends before the ack
   * (the process died) makes them leasable again: at-least-once.
   */
  leaseNotifications(max: number, leaseMs: number, nowMs: number): Promise<OutboxMessage[]>;
  ackNotifications(ids: readonly string[]): Promise<void>;

  /** Aborts multipart uploads started before `cutoff` (ms), as R2's default lifecycle does after 7 days. Returns how many. */
  abortStaleUploads(cutoff: number): Promise<number>;
  /** Content ids any object or unfinished upload still refers to (for the content store's garbage collector). */
  liveContent(): Promise<Set<string>>;
}
