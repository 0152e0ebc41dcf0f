import type { CacheSettings } from "../ports.js";
import type { CacheOverrides } from "./http-cache.js";

/** The longest cf.cacheKey taken (ours: as the purge API's longest URL). */
const MAX_CACHE_KEY_CHARS = 4096;
/** Tags of one request (hosted: a Cache-Tag header of at most 16 KiB; each tag at most 1,024 characters). */
const MAX_TAG_CHARS = 1024;
const MAX_TAGS = 1000;

/**
 * A Worker's `cf` options on a fetch to its zone's origin (workerd sends them as JSON in the outbound's cfBlobHeader)
 * as the cache's overrides, with the hosted meanings:
 * - `cacheEverything: true`: every file type is eligible (as a Cache Rule's "eligible for cache");
 * - `cacheTtl: n`: cached for n seconds whatever the origin's lifetime says, and every file type is eligible (hosted:
 *   Edge Cache TTL plus Cache Everything); 0 expires at once; a negative value is not cached;
 * - `cacheTtlByStatus: {"200-299": n, "404": m}`: the TTL by the answer's status (negative: not cached);
 * - `cacheKey`: the object's key instead of the URL; `cacheTags`: tags added to the origin's Cache-Tag.
 * Undefined when none of them is set (other cf fields are not the cache's). A message when one is malformed.
 */
export function cacheOverridesOf(cfJson: string | undefined): CacheOverrides | undefined | string {
  if (cfJson === undefined || cfJson === "") return undefined;
  let cf: unknown;
  try {
    cf = JSON.parse(cfJson);
  } catch {
    return "cf is not valid JSON";
  }
  if (typeof cf !== "object" || cf === null || Array.isArray(cf)) return undefined;
  const get = (name: string): unknown => (Object.hasOwn(cf, name) ? (cf as Record<string, unknown>)[name] : undefined);
  const everything = get("cacheEverything");
  const ttl = get("cacheTtl");
  const byStatus = get("cacheTtlByStatus");
  const key = get("cacheKey");
  const tags = get("cacheTags");
  if (everything === undefined && ttl === undefined && byStatus === undefined && key === undefined && tags === undefined) return undefined;
  const settings: CacheSettings = {};
  if (everything !== undefined) {
    if (typeof everything !== "boolean") return "cf.cacheEverything must be a boolean";
    if (everything) settings.cache = true;
  }
  const statusTtl: NonNullable<NonNullable<CacheSettings["edge_ttl"]>["status_code_ttl"]> = [];
  if (byStatus !== undefined) {
    if (typeof byStatus !== "object" || byStatus === null || Array.isArray(byStatus)) return "cf.cacheTtlByStatus must be an object of statuses to seconds";
    for (const [range, value] of Object.entries(byStatus)) {
      if (typeof value !== "number" || !Number.isInteger(value)) return `cf.cacheTtlByStatus["${range.slice(0, 32)}"] must be an integer`;
      const m = /^(\d{3})(?:-(\d{3}))?$/.exec(range.trim());
      const from = m ? Number(m[1]) : NaN;
      const to = m?.[2] !== undefined ? Number(m[2]) : from;
      if (!m || from < 100 || to > 599 || to < from) return `cf.cacheTtlByStatus key "${range.slice(0, 32)}" is not a status or a range such as "200-299"`;
      statusTtl.push(from === to ? { status_code: from, value: Math.max(value, -1) } : { status_code_range: { from, to }, value: Math.max(value, -1) });
    }
    // Any status: eligible as with cacheTtl (hosted: cacheTtlByStatus is "a version of the cacheTtl feature").
    settings.cache = true;
  }
  if (ttl !== undefined) {
    if (typeof ttl !== "number" || !Number.isInteger(ttl)) return "cf.cacheTtl must be an integer number of seconds";
    settings.cache = true;
    // A negative TTL: not cached, whatever the status (after any cacheTtlByStatus entry for it).
    if (ttl < 0) statusTtl.push({ status_code_range: { from: 100, to: 599 }, value: -1 });
    else settings.edge_ttl = { mode: "override_origin", default: Math.min(ttl, 2 ** 31) };
  }
  if (statusTtl.length > 0) settings.edge_ttl = { ...(settings.edge_ttl ?? { mode: "respect_origin" }), status_code_ttl: statusTtl };
  const out: CacheOverrides = { settings };
  if (key !== undefined) {
    if (typeof key !== "string" || key === "" || key.length > MAX_CACHE_KEY_CHARS)
      return `cf.cacheKey must be a string of 1 to ${MAX_CACHE_KEY_CHARS} characters`;
    out.key = key;
  }
  if (tags !== undefined) {
    if (!Array.isArray(tags) || tags.length > MAX_TAGS || tags.some((t) => typeof t !== "string" || t.trim() === "" || t.length > MAX_TAG_CHARS))
      return `cf.cacheTags must be a list of at most ${MAX_TAGS} tags of 1 to ${MAX_TAG_CHARS} characters`;
    out.tags = [...new Set((tags as string[]).map((t) => t.trim().toLowerCase()))];
  }
  return out;
}
