import { R2Errors } from "./errors.js";
import { BUCKET_NAME_RE, R2Limits } from "./limits.js";
import { type R2HttpMetadata } from "./store.js";

export function assertBucketName(name: string): void {
  if (!BUCKET_NAME_RE.test(name)) throw R2Errors.invalidBucketName(name);
}

export function assertKey(key: unknown): asserts key is string {
  if (typeof key !== "string" || key.length === 0) throw R2Errors.emptyKey();
  if (Buffer.byteLength(key) > R2Limits.maxKeyBytes) throw R2Errors.keyTooLong();
}

export function assertCustomMetadata(meta: Record<string, string> | undefined): void {
  if (!meta) return;
  let bytes = 0;
  for (const [k, v] of Object.entries(meta)) {
    if (typeof v !== "string") throw R2Errors.metadataNotString(k);
    bytes += Buffer.byteLength(k) + Buffer.byteLength(v);
  }
  if (bytes > R2Limits.maxCustomMetadataBytes) throw R2Errors.metadataTooLarge(bytes);
}

const HTTP_FIELDS = ["contentType", "contentLanguage", "contentDisposition", "contentEncoding", "cacheControl"] as const;

/** Keeps only the known fields, with the right types; anything else is a 400 rather than stored garbage. */
export function cleanHttpMetadata(input: unknown): R2HttpMetadata {
  if (input === undefined || input === null) return {};
  if (typeof input !== "object") throw R2Errors.httpMetadataNotObject();
  const src = input as Record<string, unknown>;
  const out: R2HttpMetadata = {};
  for (const f of HTTP_FIELDS) {
    const v = src[f];
    if (v === undefined || v === null) continue;
    if (typeof v !== "string") throw R2Errors.httpFieldNotString(f);
    out[f] = v;
  }
  if (src.cacheExpiry !== undefined && src.cacheExpiry !== null) {
    const n = Number(src.cacheExpiry);
    if (!Number.isSafeInteger(n)) throw R2Errors.invalidCacheExpiry();
    out.cacheExpiry = n;
  }
  return out;
}

const STORAGE_CLASSES = ["Standard", "InfrequentAccess"] as const;

export function assertStorageClass(cls: string | undefined): string {
  if (cls === undefined) return "Standard";
  if (!(STORAGE_CLASSES as readonly string[]).includes(cls)) throw R2Errors.unknownStorageClass(cls, STORAGE_CLASSES);
  return cls;
}

/**
 * PostgreSQL text cannot hold U+0000: a key, name or listing bound with it is refused as invalid (400) rather than
 * failing in the database. (SQLite stores such keys; S3 clients practically never send them.)
 */
export function assertPgText(...values: (string | undefined)[]): void {
  for (const v of values) if (typeof v === "string" && v.includes("\u0000")) throw R2Errors.keyWithNul();
}
