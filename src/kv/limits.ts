import { EdgeError } from "../core/errors.js";
import type { TooLarge } from "../core/http/body.js";

/** The limits every KV entry obeys, whichever door (API, --local CLI, worker binding) it came through. */
export const KV_LIMITS = {
  keyBytes: 512,
  valueBytes: 25 * 1024 * 1024,
  metadataBytes: 1024,
  minTtlSeconds: 60,
  listLimit: 1000,
  bulkWriteEntries: 10_000,
  bulkGetKeys: 100,
  /** Values up to this size live inline in SQLite; bigger ones in the content store. */
  inlineValueBytes: 64 * 1024,
} as const;

/**
 * KV error codes. 10009/10013/10014 are the ones the real API and wrangler use; the validation codes are
 * our own, one per rule, so a client can tell the rules apart without parsing messages.
 */
export const KvCodes = {
  badRequest: 10001,
  keyNotFound: 10009,
  namespaceNotFound: 10013,
  titleExists: 10014,
  invalidTitle: 10019,
  invalidKey: 10020,
  keyTooLong: 10033,
  valueTooLarge: 10029,
  metadataTooLarge: 10018,
  invalidMetadata: 10028,
  invalidExpiration: 10024,
  invalidTtl: 10025,
  tooManyEntries: 10026,
  invalidLimit: 10027,
  invalidCursor: 10030,
  /** The hosted API's code for 429, "Please wait and consider throttling your request speed". */
  throttled: 971,
} as const;

export function keyError(key: string): EdgeError | undefined {
  if (typeof key !== "string" || key.length === 0) return new EdgeError(400, KvCodes.invalidKey, "key must not be empty");
  if (key === "." || key === "..") return new EdgeError(400, KvCodes.invalidKey, `key must not be "${key}"`);
  const bytes = Buffer.byteLength(key, "utf8");
  if (bytes > KV_LIMITS.keyBytes) {
    return new EdgeError(414, KvCodes.keyTooLong, `key is ${bytes} bytes long, the limit is ${KV_LIMITS.keyBytes} bytes`);
  }
  return undefined;
}

export function checkKey(key: string): void {
  const e = keyError(key);
  if (e) throw e;
}

/** The refusal for a body read past its limit (core/http/body.ts); `what` names it ("value", "bulk get body"). */
export const bodyTooLarge =
  (what: string): TooLarge =>
  (limit, size) =>
    new EdgeError(
      413,
      KvCodes.valueTooLarge,
      `${what} is too large: the limit is ${limit} bytes, got ${size === undefined ? "more than that" : `${size} bytes`}`,
    );

export function valueError(size: number): EdgeError | undefined {
  return size > KV_LIMITS.valueBytes
    ? new EdgeError(413, KvCodes.valueTooLarge, `value is ${size} bytes, the limit is ${KV_LIMITS.valueBytes} bytes (25 MiB)`)
    : undefined;
}

/** Serializes metadata, enforcing the 1,024-byte limit; undefined/null means no metadata. */
export function serializeMetadata(metadata: unknown): { json?: string; error?: EdgeError } {
  if (metadata === undefined || metadata === null) return {};
  let json: string | undefined;
  try {
    json = JSON.stringify(metadata);
  } catch {
    json = undefined;
  }
  if (json === undefined) return { error: new EdgeError(400, KvCodes.invalidMetadata, "metadata must serialize to JSON") };
  const bytes = Buffer.byteLength(json, "utf8");
  if (bytes > KV_LIMITS.metadataBytes) {
    return { error: new EdgeError(413, KvCodes.metadataTooLarge, `metadata is ${bytes} bytes serialized, the limit is ${KV_LIMITS.metadataBytes} bytes`) };
  }
  return { json };
}

/**
 * Turns `expiration` (UNIX seconds) / `expiration_ttl` (seconds from now) into an absolute expiration.
 * The TTL wins when both are given, as in wrangler. Both must land at least 60 s in the future.
 */
export function resolveExpiration(
  opts: { expiration?: number; expirationTtl?: number },
  nowSeconds = Math.floor(Date.now() / 1000),
): { expiration?: number; error?: EdgeError } {
  const { expiration, expirationTtl } = opts;
  if (expirationTtl !== undefined && expirationTtl !== null) {
    if (!Number.isFinite(expirationTtl) || !Number.isInteger(expirationTtl)) {
      return { error: new EdgeError(400, KvCodes.invalidTtl, `expiration_ttl must be a whole number of seconds, got ${String(expirationTtl)}`) };
    }
    if (expirationTtl < KV_LIMITS.minTtlSeconds) {
      return { error: new EdgeError(400, KvCodes.invalidTtl, `expiration_ttl of ${expirationTtl} is below the minimum of ${KV_LIMITS.minTtlSeconds} seconds`) };
    }
    return { expiration: nowSeconds + expirationTtl };
  }
  if (expiration !== undefined && expiration !== null) {
    if (!Number.isFinite(expiration) || !Number.isInteger(expiration)) {
      return { error: new EdgeError(400, KvCodes.invalidExpiration, `expiration must be a whole number of UNIX seconds, got ${String(expiration)}`) };
    }
    if (expiration < nowSeconds + KV_LIMITS.minTtlSeconds) {
      const why = expiration <= nowSeconds ? "is in the past" : `is less than ${KV_LIMITS.minTtlSeconds} seconds from now`;
      return {
        error: new EdgeError(
          400,
          KvCodes.invalidExpiration,
          `expiration ${expiration} ${why}; it must be at least ${KV_LIMITS.minTtlSeconds} seconds in the future`,
        ),
      };
    }
    return { expiration };
  }
  return {};
}

export function checkTitle(title: unknown): string {
  if (typeof title !== "string" || title.trim().length === 0) throw new EdgeError(400, KvCodes.invalidTitle, "title must be a non-empty string");
  if (Buffer.byteLength(title, "utf8") > 512) throw new EdgeError(400, KvCodes.invalidTitle, "title must be at most 512 bytes");
  return title;
}

/** Reads `expiration` / `expiration_ttl` from a query string value; absent or empty means not given. */
export function numberParam(v: string | null | undefined, name: "expiration" | "expiration_ttl"): number | undefined {
  if (v === undefined || v === null || v === "") return undefined;
  const n = Number(v);
  if (!Number.isFinite(n)) {
    throw new EdgeError(400, name === "expiration" ? KvCodes.invalidExpiration : KvCodes.invalidTtl, `${name} must be a number, got ${JSON.stringify(v)}`);
  }
  return n;
}
