import { EdgeError } from "../core/errors.js";
import { KvErrors } from "./errors.js";
import { KV_LIMITS } from "./limits.js";
import type { KvBulkEntry, KvPutOptions } from "./store.js";

/*
 * The rules every KV entry obeys, checked by every store backend and, before anything is sent or opened, by the
 * CLI. Each check throws the KvErrors refusal of the first rule broken.
 */

export function checkKey(key: string): void {
  if (typeof key !== "string" || key.length === 0) throw KvErrors.keyEmpty();
  if (key === "." || key === "..") throw KvErrors.keyReserved(key);
  const bytes = Buffer.byteLength(key, "utf8");
  if (bytes > KV_LIMITS.keyBytes) throw KvErrors.keyTooLong(bytes);
}

/** Runs `check` for one item of a list; its refusal names the item (`entry 3: key must not be empty`). */
export function forItem<T>(item: string, check: () => T): T {
  try {
    return check();
  } catch (err) {
    throw err instanceof EdgeError ? KvErrors.inItem(item, err) : err;
  }
}

/** The keys of a bulk delete, each checked (a refusal names its index), as UTF-8 bytes. */
export function checkKeysToDelete(keys: readonly unknown[]): Buffer[] {
  return keys.map((k, i) =>
    forItem(`entry ${i}`, () => {
      if (typeof k !== "string") throw KvErrors.keyNotString();
      checkKey(k);
      return Buffer.from(k, "utf8");
    }),
  );
}

/** Serializes metadata within its size limit; undefined or null means no metadata. */
function serializeMetadata(metadata: unknown): string | null {
  if (metadata === undefined || metadata === null) return null;
  let json: string | undefined;
  try {
    json = JSON.stringify(metadata);
  } catch {
    json = undefined;
  }
  if (json === undefined) throw KvErrors.metadataNotJson();
  const bytes = Buffer.byteLength(json, "utf8");
  if (bytes > KV_LIMITS.metadataBytes) throw KvErrors.metadataTooLarge(bytes);
  return json;
}

/**
 * Turns `expiration` (UNIX seconds) / `expirationTtl` (seconds from now) into an absolute expiration, or null for
 * none. The TTL wins when both are given, as in wrangler. Both must land at least 60 s in the future.
 */
function resolveExpiration(opts: KvPutOptions, nowSeconds = Math.floor(Date.now() / 1000)): number | null {
  const { expiration, expirationTtl } = opts;
  if (expirationTtl !== undefined && expirationTtl !== null) {
    if (!Number.isInteger(expirationTtl)) throw KvErrors.ttlNotWhole(expirationTtl);
    if (expirationTtl < KV_LIMITS.minTtlSeconds) throw KvErrors.ttlTooShort(expirationTtl);
    return nowSeconds + expirationTtl;
  }
  if (expiration !== undefined && expiration !== null) {
    if (!Number.isInteger(expiration)) throw KvErrors.expirationNotWhole(expiration);
    if (expiration < nowSeconds + KV_LIMITS.minTtlSeconds) throw KvErrors.expirationTooSoon(expiration, nowSeconds);
    return expiration;
  }
  return null;
}

export function checkTitle(title: unknown): string {
  if (typeof title !== "string" || title.trim().length === 0) throw KvErrors.titleEmpty();
  if (Buffer.byteLength(title, "utf8") > KV_LIMITS.titleBytes) throw KvErrors.titleTooLong();
  return title;
}

/** One entry, checked and ready to store: the key's UTF-8 bytes (the order keys are listed in), metadata as JSON. */
export interface PreparedEntry {
  key: Buffer;
  value: Buffer;
  metadata: string | null;
  /** UNIX seconds, or null when the key never expires. */
  expiration: number | null;
}

/** Checks one entry against every rule (key, value size, metadata, expiration) and returns what will be stored. */
export function prepareEntry(key: string, value: Buffer, opts: KvPutOptions): PreparedEntry {
  checkKey(key);
  if (!Buffer.isBuffer(value)) throw KvErrors.valueNotBytes();
  if (value.length > KV_LIMITS.valueBytes) throw KvErrors.valueTooLarge(value.length);
  const metadata = serializeMetadata(opts.metadata);
  return { key: Buffer.from(key, "utf8"), value, metadata, expiration: resolveExpiration(opts) };
}

/** The entries of a putMany, each checked (a refusal names its index), at most KV_LIMITS.bulkWriteEntries of them. */
export function prepareEntries(entries: readonly KvBulkEntry[]): PreparedEntry[] {
  if (entries.length > KV_LIMITS.bulkWriteEntries) throw KvErrors.tooManyEntries(entries.length);
  return entries.map((e, i) => forItem(`entry ${i}`, () => prepareEntry(e.key, e.value, e)));
}

/** Reads `expiration` / `expiration_ttl` from a query string value; absent or empty means not given. */
export function numberParam(v: string | null | undefined, name: "expiration" | "expiration_ttl"): number | undefined {
  if (v === undefined || v === null || v === "") return undefined;
  const n = Number(v);
  if (!Number.isFinite(n)) throw KvErrors.notANumber(name, v);
  return n;
}
