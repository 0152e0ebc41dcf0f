import type { R2Conditional, R2EtagCondition, R2ObjectInfo } from "../store.js";

const toSeconds = (ms: number) => Math.floor(ms / 1000) * 1000;

/** Strong comparison (RFC 7232 §2.3.2): a weak condition never matches; a wildcard matches any object. */
function etagListMatches(conds: readonly R2EtagCondition[], etag: string): boolean {
  return conds.some((c) => c.type === "wildcard" || (c.type === "strong" && c.value === etag));
}

/**
 * Whether an operation guarded by `cond` may proceed on `obj` (undefined = no object). Follows RFC 7232
 * §6: an If-Match that is present overrides If-Unmodified-Since, and an If-None-Match overrides
 * If-Modified-Since, so a matching etag wins over a clock comparison.
 */
export function conditionHolds(cond: R2Conditional, obj: Pick<R2ObjectInfo, "etag" | "uploaded"> | undefined): boolean {
  if (!obj) return cond.etagMatches === undefined && cond.uploadedAfter === undefined;
  const trunc = cond.secondsGranularity ? toSeconds : (ms: number) => ms;
  const uploaded = trunc(obj.uploaded);
  const ifMatch = cond.etagMatches === undefined || etagListMatches(cond.etagMatches, obj.etag);
  const ifNoneMatch = cond.etagDoesNotMatch === undefined || !etagListMatches(cond.etagDoesNotMatch, obj.etag);
  const ifUnmodifiedSince = cond.uploadedBefore === undefined || (cond.etagMatches !== undefined && ifMatch) || uploaded < trunc(cond.uploadedBefore);
  const ifModifiedSince = cond.uploadedAfter === undefined || (cond.etagDoesNotMatch !== undefined && ifNoneMatch) || uploaded > trunc(cond.uploadedAfter);
  return ifMatch && ifNoneMatch && ifUnmodifiedSince && ifModifiedSince;
}

/** Parses an If-Match / If-None-Match value: `*`, or a comma list of `"etag"` / `W/"etag"` (bare tokens tolerated). */
function parseEtagList(header: string): R2EtagCondition[] {
  return header
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s): R2EtagCondition => {
      if (s === "*") return { type: "wildcard" };
      const weak = s.startsWith("W/");
      const raw = weak ? s.slice(2) : s;
      const value = raw.startsWith('"') && raw.endsWith('"') && raw.length >= 2 ? raw.slice(1, -1) : raw;
      return { type: weak ? "weak" : "strong", value };
    });
}

/** Builds a conditional from HTTP request headers; undefined when none of them is present or usable. */
export function conditionalFromHeaders(headers: Record<string, string | string[] | undefined>): R2Conditional | undefined {
  const one = (name: string) => {
    const v = headers[name];
    return Array.isArray(v) ? v.join(",") : v;
  };
  const cond: R2Conditional = {};
  const ifMatch = one("if-match");
  const ifNoneMatch = one("if-none-match");
  if (ifMatch) cond.etagMatches = parseEtagList(ifMatch);
  if (ifNoneMatch) cond.etagDoesNotMatch = parseEtagList(ifNoneMatch);
  // HTTP dates carry whole seconds; an unparsable date is ignored, as RFC 7232 asks.
  const date = (name: string) => {
    const v = one(name);
    const t = v ? Date.parse(v) : NaN;
    return Number.isFinite(t) ? t : undefined;
  };
  const before = date("if-unmodified-since");
  const after = date("if-modified-since");
  if (before !== undefined) cond.uploadedBefore = before;
  if (after !== undefined) cond.uploadedAfter = after;
  if (before !== undefined || after !== undefined) cond.secondsGranularity = true;
  return Object.keys(cond).length ? cond : undefined;
}
