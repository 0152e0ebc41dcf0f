import type { CacheSettings } from "../ports.js";

/**
 * What the hosted cache stores by default, and for how long: the file extensions it caches without a rule (HTML is
 * not among them), the Edge TTLs by status when the origin says nothing, and the origin's Cache-Control.
 * Researched from the hosted docs ("Default cache behavior", "Cache by status code"); docs/cache.md has the table.
 */
export const DEFAULT_CACHED_EXTENSIONS: ReadonlySet<string> = new Set([
  "7z",
  "avi",
  "avif",
  "apk",
  "bin",
  "bmp",
  "bz2",
  "class",
  "css",
  "csv",
  "doc",
  "docx",
  "dmg",
  "ejs",
  "eot",
  "eps",
  "exe",
  "flac",
  "gif",
  "gz",
  "ico",
  "iso",
  "jar",
  "jpeg",
  "jpg",
  "js",
  "mid",
  "midi",
  "mkv",
  "mp3",
  "mp4",
  "ogg",
  "otf",
  "pdf",
  "pict",
  "pls",
  "png",
  "ppt",
  "pptx",
  "ps",
  "rar",
  "svg",
  "svgz",
  "swf",
  "tar",
  "tif",
  "tiff",
  "ttf",
  "webm",
  "webp",
  "woff",
  "woff2",
  "xls",
  "xlsx",
  "zip",
  "zst",
]);

/** Edge TTLs (seconds) by status when the origin sends neither Cache-Control freshness nor Expires; others: not cached. */
export const DEFAULT_TTL_BY_STATUS: ReadonlyMap<number, number> = new Map([
  [200, 7200],
  [206, 7200],
  [301, 7200],
  [302, 1200],
  [303, 1200],
  [404, 180],
  [410, 180],
]);

/** Statuses stored when the origin gives them an explicit lifetime (RFC 9111's cacheable ones, and redirects). */
const STORABLE_WITH_LIFETIME = new Set([200, 203, 204, 300, 301, 302, 303, 307, 308, 404, 405, 410, 414, 501]);

/** The last path segment's extension, lowercase ("" when none). */
export function extensionOf(path: string): string {
  const segment = path.slice(path.lastIndexOf("/") + 1);
  const dot = segment.lastIndexOf(".");
  return dot <= 0 ? "" : segment.slice(dot + 1).toLowerCase();
}

export interface CacheControl {
  noStore: boolean;
  private: boolean;
  noCache: boolean;
  public: boolean;
  mustRevalidate: boolean;
  maxAge?: number;
  sMaxAge?: number;
  staleWhileRevalidate?: number;
  staleIfError?: number;
}

const seconds = (v: string | undefined): number | undefined => {
  if (v === undefined) return undefined;
  const n = Number(v.replace(/^"|"$/g, ""));
  return Number.isInteger(n) && n >= 0 ? Math.min(n, 2 ** 31) : undefined;
};

/** Cache-Control's directives (unknown ones ignored, as RFC 9111 says). */
export function parseCacheControl(value: string | string[] | undefined): CacheControl {
  const cc: CacheControl = { noStore: false, private: false, noCache: false, public: false, mustRevalidate: false };
  const text = Array.isArray(value) ? value.join(",") : (value ?? "");
  for (const part of text.split(",")) {
    const eq = part.indexOf("=");
    const name = (eq < 0 ? part : part.slice(0, eq)).trim().toLowerCase();
    const arg = eq < 0 ? undefined : part.slice(eq + 1).trim();
    if (name === "no-store") cc.noStore = true;
    else if (name === "private") cc.private = true;
    else if (name === "no-cache") cc.noCache = true;
    else if (name === "public") cc.public = true;
    else if (name === "must-revalidate" || name === "proxy-revalidate") cc.mustRevalidate = true;
    else if (name === "max-age") cc.maxAge = seconds(arg);
    else if (name === "s-maxage") cc.sMaxAge = seconds(arg);
    else if (name === "stale-while-revalidate") cc.staleWhileRevalidate = seconds(arg);
    else if (name === "stale-if-error") cc.staleIfError = seconds(arg);
  }
  return cc;
}

export type Headers = Record<string, string | string[]>;

const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);

/** How a request may use the cache, before the origin is asked. */
export type RequestVerdict =
  | { use: "cache"; ignoreQuery: boolean }
  /** Not for the cache at all: forwarded as it is (`DYNAMIC`). */
  | { use: "dynamic" }
  /** Eligible, but the zone or the request says not to use the cache now (`BYPASS`). */
  | { use: "bypass" };

const DYNAMIC: RequestVerdict = Object.freeze({ use: "dynamic" });
const BYPASS: RequestVerdict = Object.freeze({ use: "bypass" });
const CACHE: RequestVerdict = Object.freeze({ use: "cache", ignoreQuery: false });
const CACHE_IGNORING_QUERY: RequestVerdict = Object.freeze({ use: "cache", ignoreQuery: true });

/**
 * Whether a request is looked up in the cache: GET and HEAD only; by extension unless a Cache Rule says `cache`;
 * development_mode bypasses; cache_level `basic` ("no query string") leaves requests with a query to the origin,
 * `simplified` ("ignore query string") keys without the query. A request with Authorization is the origin's (a
 * shared cache answering it would hand one user's answer to another).
 */
export function requestVerdict(
  r: { method: string; path: string; query: string; authorization: boolean },
  /** The zone's settings, read only for an eligible request (most proxied requests are not: no work for them). */
  zoneOf: () => { developmentMode: boolean; cacheLevel: string },
  rules: CacheSettings,
): RequestVerdict {
  if (r.method !== "GET" && r.method !== "HEAD") return DYNAMIC;
  if (rules.cache === false) return BYPASS;
  const eligible = rules.cache === true || DEFAULT_CACHED_EXTENSIONS.has(extensionOf(r.path));
  if (!eligible) return DYNAMIC;
  const zone = zoneOf();
  if (zone.developmentMode || r.authorization) return BYPASS;
  if (zone.cacheLevel === "basic" && r.query !== "") return BYPASS;
  if (!normalTarget(r.path, r.query)) return BYPASS;
  return zone.cacheLevel === "simplified" ? CACHE_IGNORING_QUERY : CACHE;
}

/** A path of RFC 3986 pchars and "/" only: nothing the URL parser changes, no %-escape. */
const PLAIN_PATH = /^[A-Za-z0-9\-._~!$&'()*+,;=:@/]*$/;
/** The same with %-escapes, each two upper-case hex digits (the spelling the hosted URL normalization keeps). */
const ESCAPED_PATH = /^(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/]|%[0-9A-F]{2})*$/;
/** A dot segment or an empty one: the origin reads `/a/../x.js`, `/./x.js` and `//x.js` as `/x.js`. */
const DOT_OR_EMPTY_SEGMENT = /\/\/|\/\.\.?(?:\/|$)/;
const UNRESERVED = /^[A-Za-z0-9\-._~]$/;
/** What the URL parser leaves as it is in an http(s) query (its query percent-encode set: C0, space, " # < > '). */
const PLAIN_QUERY = /^[\x21\x24-\x26\x28-\x3b\x3d\x3f-\x7e]*$/;

/**
 * Whether a request target is in the one spelling a purge by URL names (purge.ts reads its URLs with the URL parser,
 * the hosted URL normalization decodes escapes of unreserved characters): no dot or empty segments, nothing the
 * parser would change or %-encode, no %-escape of an unreserved character, none in lower case. An origin reads
 * `/a/../x.js`, `//x.js` or `/%78.js` as `/x.js`, but a key of that spelling is one no purge of `/x.js` reaches: a
 * client could keep a purged object served under it. Such requests go to the origin (BYPASS), never into the cache.
 */
export function normalTarget(path: string, query: string): boolean {
  if (query !== "" && !PLAIN_QUERY.test(query)) return false;
  if (!PLAIN_PATH.test(path)) {
    if (!ESCAPED_PATH.test(path)) return false;
    for (const [, hex] of path.matchAll(/%([0-9A-F]{2})/g)) if (UNRESERVED.test(String.fromCharCode(parseInt(hex, 16)))) return false;
  }
  return !DOT_OR_EMPTY_SEGMENT.test(path);
}

/** What to do with an origin's answer to a cacheable request. */
export type StoreVerdict =
  | {
      store: true;
      /** Seconds the stored answer is fresh (0: revalidated on every request, as `no-cache`). */
      ttl: number;
      staleWhileRevalidate: number;
      staleIfError: number;
    }
  | { store: false; why: "directive" | "set-cookie" | "vary" | "status" | "no-validator" };

/**
 * The hosted rules for storing an answer: `no-store`/`private` never; a Set-Cookie never; a Vary on anything but
 * Accept-Encoding never; `s-maxage` over `max-age` over `Expires` over the default TTL of the status; `no-cache` (and
 * a lifetime of 0) stored only with a validator, and revalidated on every request. A Cache Rule's `edge_ttl` is
 * obeyed: `override_origin` sets the lifetime whatever the origin said, `bypass_by_default` stores only answers the
 * origin gave a lifetime, `status_code_ttl` sets it by status (a negative value: not stored).
 */
export function storeVerdict(status: number, headers: Headers, rules: CacheSettings, now: number): StoreVerdict {
  const cc = parseCacheControl(headers["cache-control"]);
  if (cc.noStore || cc.private) return { store: false, why: "directive" };
  if (headers["set-cookie"] !== undefined) return { store: false, why: "set-cookie" };
  const vary = one(headers.vary);
  if (vary !== undefined && vary.split(",").some((v) => v.trim() !== "" && v.trim().toLowerCase() !== "accept-encoding")) return { store: false, why: "vary" };
  const stale = { staleWhileRevalidate: cc.staleWhileRevalidate ?? 0, staleIfError: cc.staleIfError ?? 0 };
  let origin: number | undefined = cc.sMaxAge ?? cc.maxAge;
  if (origin === undefined && headers.expires !== undefined) {
    const expires = Date.parse(one(headers.expires) ?? "");
    const date = Date.parse(one(headers.date) ?? "");
    origin = Number.isNaN(expires) ? 0 : Math.max(0, Math.floor((expires - (Number.isNaN(date) ? now : date)) / 1000));
  }
  if (cc.noCache) origin = 0;
  const byStatus = statusTtl(rules, status);
  if (byStatus !== undefined) return byStatus < 0 ? { store: false, why: "status" } : { store: true, ttl: byStatus, ...stale };
  const mode = rules.edge_ttl?.mode ?? "respect_origin";
  if (mode === "override_origin" && rules.edge_ttl?.default !== undefined) return { store: true, ttl: rules.edge_ttl.default, ...stale };
  if (origin !== undefined) {
    if (!STORABLE_WITH_LIFETIME.has(status) && !(status === 206 && origin > 0)) return { store: false, why: "status" };
    if (origin === 0 && headers.etag === undefined && headers["last-modified"] === undefined) return { store: false, why: "no-validator" };
    return { store: true, ttl: origin, ...stale };
  }
  if (mode === "bypass_by_default") return { store: false, why: "directive" };
  const fallback = rules.edge_ttl?.default ?? DEFAULT_TTL_BY_STATUS.get(status);
  return fallback === undefined ? { store: false, why: "status" } : { store: true, ttl: fallback, ...stale };
}

function statusTtl(rules: CacheSettings, status: number): number | undefined {
  for (const s of rules.edge_ttl?.status_code_ttl ?? []) {
    if (s.status_code === status) return s.value;
    const range = s.status_code_range;
    if (range && status >= (range.from ?? 100) && status <= (range.to ?? 599)) return s.value;
  }
  return undefined;
}

/**
 * The Cache-Control a browser gets for an answer the cache handled: the zone's Browser Cache TTL (0: the origin's
 * headers as they are) replaces an origin lifetime that is shorter, or missing; `no-store`, `no-cache` and `private`
 * are kept. A Cache Rule's `browser_ttl` wins over the zone setting.
 */
export function browserCacheControl(headers: Headers, zoneBrowserTtl: number, rules: CacheSettings): string | undefined {
  const current = one(headers["cache-control"]);
  const mode = rules.browser_ttl?.mode;
  if (mode === "bypass") return "no-store";
  const cc = parseCacheControl(current);
  if (mode === "override_origin" && rules.browser_ttl?.default !== undefined) return `max-age=${rules.browser_ttl.default}`;
  if (mode === "respect_origin" || zoneBrowserTtl === 0) return current;
  if (cc.noStore || cc.noCache || cc.private) return current;
  const originAge = cc.maxAge ?? (headers.expires !== undefined ? undefined : -1);
  if (originAge === undefined) return current;
  if (originAge >= zoneBrowserTtl) return current;
  return `max-age=${zoneBrowserTtl}`;
}

/**
 * The query string as the cache key has it, after a Cache Rule's `cache_key`: only the parameters `include` names
 * (all with "*"), without those `exclude` names (none with "*"), and sorted when `ignore_query_strings_order` is on,
 * so `?b=2&a=1` and `?a=1&b=2` are one object. The origin still gets the query as the client sent it.
 */
export function cacheKeyQuery(query: string, key: CacheSettings["cache_key"]): string {
  const qs = key?.custom_key?.query_string;
  if (query === "" || (!qs && !key?.ignore_query_strings_order)) return query;
  const nameOf = (part: string) => {
    const eq = part.indexOf("=");
    const raw = eq < 0 ? part : part.slice(0, eq);
    try {
      return decodeURIComponent(raw.replace(/\+/g, " "));
    } catch {
      return raw;
    }
  };
  let parts = query.split("&").filter((p) => p !== "");
  if (Array.isArray(qs?.include)) {
    const keep = new Set(qs.include);
    parts = parts.filter((p) => keep.has(nameOf(p)));
  }
  if (qs?.exclude === "*") parts = [];
  else if (Array.isArray(qs?.exclude)) {
    const drop = new Set(qs.exclude);
    parts = parts.filter((p) => !drop.has(nameOf(p)));
  }
  if (key?.ignore_query_strings_order) parts.sort();
  return parts.join("&");
}
