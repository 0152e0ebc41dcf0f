import { ApiError } from "../core/errors.js";
import { KV_LIMITS, KvCodes } from "./limits.js";
import type { KvBulkEntry } from "./store.js";

/** Validates the bulk-write array entry by entry; the first bad entry rejects the whole request. */
export function bulkEntries(body: unknown): KvBulkEntry[] {
  if (!Array.isArray(body)) throw new ApiError(400, KvCodes.badRequest, "the body must be a JSON array of entries");
  if (body.length > KV_LIMITS.bulkWriteEntries) {
    throw new ApiError(413, KvCodes.tooManyEntries, `a bulk write holds at most ${KV_LIMITS.bulkWriteEntries} entries, got ${body.length}`);
  }
  return body.map((raw, i) => bulkEntry(raw, i));
}

export function bulkEntry(raw: unknown, i: number): KvBulkEntry {
  const bad = (rule: string) => new ApiError(400, KvCodes.badRequest, `entry ${i}: ${rule}`);
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) throw bad("must be an object with key and value");
  const e = raw as Record<string, unknown>;
  if (typeof e.key !== "string") throw bad("key must be a string");
  if (typeof e.value !== "string") throw bad("value must be a string (serialize other values to a JSON string first)");
  if (e.base64 !== undefined && typeof e.base64 !== "boolean") throw bad("base64 must be a boolean");
  for (const f of ["expiration", "expiration_ttl"] as const) {
    if (e[f] !== undefined && e[f] !== null && typeof e[f] !== "number") throw bad(`${f} must be a number`);
  }
  if (e.metadata !== undefined && e.metadata !== null && (typeof e.metadata !== "object" || Array.isArray(e.metadata))) throw bad("metadata must be an object");
  if (e.base64 && !/^[A-Za-z0-9+/]*={0,2}$/.test(e.value)) throw bad("value is not valid base64");
  return {
    key: e.key,
    value: e.base64 ? Buffer.from(e.value, "base64") : Buffer.from(e.value, "utf8"),
    expiration: (e.expiration as number | null | undefined) ?? undefined,
    expirationTtl: (e.expiration_ttl as number | null | undefined) ?? undefined,
    metadata: e.metadata ?? undefined,
  };
}
