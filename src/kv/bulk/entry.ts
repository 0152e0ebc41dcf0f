import { EdgeError } from "../../core/errors.js";
import { KvErrors } from "../errors.js";
import { KV_LIMITS } from "../limits.js";
import type { KvBulkEntry } from "../store.js";
import { forItem, prepareEntry, type PreparedEntry } from "../validation.js";

/**
 * Reads element `i` of a bulk write (the API's streamed body, the CLI's file) as an entry: `{key, value, base64?,
 * expiration?, expiration_ttl?, metadata?}`. Checks its shape only; the entry rules (validation.ts) come after.
 */
export function parseBulkEntry(raw: unknown, i: number): KvBulkEntry {
  const bad = (rule: string) => KvErrors.badEntry(i, rule);
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
 * Checks the elements of a streamed bulk write one by one as they arrive (parseBulkEntry, then the entry rules).
 * After the first refusal the rest is still read, so the answer names the first rule the body broke, in the order
 * the API always checked them: malformed JSON (thrown by the parser), too many entries, then the first bad entry.
 */
export class BulkEntryChecker {
  /** Elements seen so far. */
  count = 0;
  /** The first bad entry's refusal. */
  refusal?: EdgeError;

  /** The entry `element` makes, or undefined once the body is refused (too many entries or a bad one). */
  check(element: unknown): PreparedEntry | undefined {
    const index = this.count++;
    if (this.refusal || this.count > KV_LIMITS.bulkWriteEntries) return undefined;
    try {
      const entry = parseBulkEntry(element, index);
      return forItem(`entry ${index}`, () => prepareEntry(entry.key, entry.value, entry));
    } catch (err) {
      if (!(err instanceof EdgeError)) throw err;
      this.refusal = err;
      return undefined;
    }
  }

  /** Whether nothing of the body may be written (staged work is then abandoned). */
  get refused(): boolean {
    return this.refusal !== undefined || this.count > KV_LIMITS.bulkWriteEntries;
  }

  /** Once the body is read to its end: throws its refusal, or returns how many entries it had. */
  finish(): number {
    if (this.count > KV_LIMITS.bulkWriteEntries) throw KvErrors.tooManyEntries(this.count);
    if (this.refusal) throw this.refusal;
    return this.count;
  }
}
