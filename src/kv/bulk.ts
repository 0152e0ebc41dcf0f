import { EdgeError } from "../core/errors.js";
import { KV_LIMITS, KvCodes } from "./limits.js";
import type { KvBulkEntry, KvStore } from "./store.js";
import { parseUserJson } from "../core/http/json-input.js";

/** Validates entry `i` of a bulk write (the API's streamed body, the CLI's file); throws a 400 naming it. */
export function bulkEntry(raw: unknown, i: number): KvBulkEntry {
  const bad = (rule: string) => new EdgeError(400, KvCodes.badRequest, `entry ${i}: ${rule}`);
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

/**
 * Bulk get, shared by the v4 route and the worker binding: `{keys, type?: "text"|"json", withMetadata?}` →
 * an object keyed by key holding the value (or `{value, metadata}`), null for missing keys.
 */
export async function bulkGet(store: KvStore, namespaceId: string, body: unknown): Promise<Record<string, unknown>> {
  const req = (body ?? {}) as { keys?: unknown; type?: unknown; withMetadata?: unknown };
  const keys = req.keys;
  if (!Array.isArray(keys) || keys.some((k) => typeof k !== "string")) throw new EdgeError(400, KvCodes.badRequest, "keys must be an array of key strings");
  if (keys.length > KV_LIMITS.bulkGetKeys) {
    throw new EdgeError(400, KvCodes.tooManyEntries, `bulk get takes at most ${KV_LIMITS.bulkGetKeys} keys, got ${keys.length}`);
  }
  const type = req.type ?? "text";
  if (type !== "text" && type !== "json") throw new EdgeError(400, KvCodes.badRequest, `type must be "text" or "json", got ${JSON.stringify(type)}`);
  // Keyed by the caller's key names: a key named __proto__ must be an entry like any other.
  const out: Record<string, unknown> = Object.create(null);
  for (const [k, entry] of await store.getMany(namespaceId, keys as string[])) {
    if (!entry) {
      out[k] = null;
      continue;
    }
    const text = entry.value.toString("utf8");
    let value: unknown = text;
    if (type === "json") {
      try {
        // A stored value is answered inside a JSON envelope, so it must also be one the answer can hold.
        value = parseUserJson(text);
      } catch (e) {
        throw new EdgeError(400, KvCodes.badRequest, `the value of ${JSON.stringify(k)} is not JSON: ${(e as Error).message}`);
      }
    }
    out[k] = req.withMetadata ? { value, metadata: entry.metadata } : value;
  }
  return out;
}
