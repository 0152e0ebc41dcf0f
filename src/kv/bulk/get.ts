import { parseUserJson } from "../../core/http/json-input.js";
import { KvErrors } from "../errors.js";
import { KV_LIMITS } from "../limits.js";
import type { KvStore } from "../store.js";

/**
 * Bulk get, shared by the v4 route and the worker binding: `{keys, type?: "text"|"json", withMetadata?}` →
 * an object keyed by key holding the value (or `{value, metadata}`), null for missing keys.
 */
export async function bulkGet(store: KvStore, namespaceId: string, body: unknown): Promise<Record<string, unknown>> {
  const req = (body ?? {}) as { keys?: unknown; type?: unknown; withMetadata?: unknown };
  const keys = req.keys;
  if (!Array.isArray(keys) || keys.some((k) => typeof k !== "string")) throw KvErrors.bulkGetKeysInvalid();
  if (keys.length > KV_LIMITS.bulkGetKeys) throw KvErrors.tooManyKeysToGet(keys.length);
  const type = req.type ?? "text";
  if (type !== "text" && type !== "json") throw KvErrors.bulkGetTypeInvalid(type);
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
        throw KvErrors.bulkGetValueNotJson(k, (e as Error).message);
      }
    }
    out[k] = req.withMetadata ? { value, metadata: entry.metadata } : value;
  }
  return out;
}
