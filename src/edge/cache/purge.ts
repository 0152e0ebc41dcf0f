import { EdgeErrors } from "../errors.js";
import type { PurgeSelector } from "./disk-index.js";
import { encodingClass } from "./http-cache.js";

/** Items one purge request may name by default (the hosted "max operations per request" of every plan but Enterprise). */
export const MAX_PURGE_ITEMS = 100;
/** The hosted items per request of one plan: `files` (Enterprise: 500) and tags, hosts or prefixes (100). */
export interface PerRequestLimits {
  files: number;
  items: number;
}
/** The longest item accepted (ours: a URL or tag longer than this is no key the cache holds). */
const MAX_ITEM_CHARS = 4096;

const KINDS = ["purge_everything", "files", "tags", "hosts", "prefixes"] as const;

const HOST_RE = /^(?=.{1,253}$)[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*$/;

/** Whether `host` is the zone's name or under it. */
const inZone = (host: string, zoneName: string) => host === zoneName || host.endsWith(`.${zoneName}`);

/**
 * A purge_cache body as the cache's selector, refused as hosted when it names nothing, several kinds, or more than
 * the plan's items per request (`perRequest`: 100, or 500 URLs on Enterprise). `files` take URLs (strings: every Accept-Encoding variant; or `{url, headers}` as hosted
 * for custom cache keys: see fileVariant). URLs and hosts must be in
 * the zone (`zoneName`), so a purge never reaches past the caller's zone.
 */
export function parsePurge(body: unknown, zoneName: string, perRequest: PerRequestLimits = { files: MAX_PURGE_ITEMS, items: MAX_PURGE_ITEMS }): PurgeSelector {
  if (typeof body !== "object" || body === null || Array.isArray(body)) throw EdgeErrors.purgeNothing();
  const given = KINDS.filter((k) => Object.hasOwn(body, k));
  if (given.length !== 1) throw EdgeErrors.purgeNothing();
  const kind = given[0];
  const value = (body as Record<string, unknown>)[kind];
  if (kind === "purge_everything") {
    if (value !== true) throw EdgeErrors.purgeEverythingNotTrue();
    return { kind: "everything" };
  }
  if (!Array.isArray(value)) throw EdgeErrors.purgeNotAList(kind);
  if (value.length === 0) throw EdgeErrors.purgeNothing();
  const max = kind === "files" ? perRequest.files : perRequest.items;
  if (value.length > max) throw EdgeErrors.purgeTooMany(kind, max);
  /** Per `files` item: the encoding class its headers name (one variant), or undefined (every variant). */
  const variants: (string | undefined)[] = [];
  const items = value.map((item: unknown, i) => {
    let text = item;
    variants[i] = undefined;
    if (kind === "files" && typeof item === "object" && item !== null && !Array.isArray(item)) {
      const { url, headers } = item as { url?: unknown; headers?: unknown };
      if (headers !== undefined) variants[i] = fileVariant(headers, i);
      text = url;
    }
    if (typeof text !== "string") throw EdgeErrors.purgeNotAList(kind);
    if (text.length === 0 || text.length > MAX_ITEM_CHARS) throw EdgeErrors.purgeBadItem(kind, i, `must be 1 to ${MAX_ITEM_CHARS} characters`);
    return text;
  });
  switch (kind) {
    case "files":
      return {
        kind: "urls",
        urls: items.flatMap((u, i) => fileUrls(u, i, zoneName).map((url) => (variants[i] === undefined ? url : `${url}\n${variants[i]}`))),
      };
    case "tags":
      return { kind: "tags", tags: items.map((t) => t.trim().toLowerCase()) };
    case "hosts":
      return {
        kind: "hosts",
        hosts: items.map((h, i) => {
          const host = h.trim().toLowerCase().replace(/\.$/, "");
          if (!HOST_RE.test(host)) throw EdgeErrors.purgeBadItem(kind, i, "must be a host name");
          if (!inZone(host, zoneName)) throw EdgeErrors.purgeBadItem(kind, i, `${host} is not in the zone ${zoneName}`);
          return host;
        }),
      };
    case "prefixes":
      return {
        kind: "prefixes",
        prefixes: items.map((p, i) => {
          // Hosted prefixes are "host/path" without a scheme; one with a scheme is taken without it.
          const bare = p.replace(/^https?:\/\//i, "");
          const slash = bare.indexOf("/");
          const host = (slash < 0 ? bare : bare.slice(0, slash)).toLowerCase();
          if (!HOST_RE.test(host)) throw EdgeErrors.purgeBadItem(kind, i, 'must be a host and a path, as "www.example.com/images/"');
          if (!inZone(host, zoneName)) throw EdgeErrors.purgeBadItem(kind, i, `${host} is not in the zone ${zoneName}`);
          return host + (slash < 0 ? "/" : bare.slice(slash));
        }),
      };
  }
}

/**
 * The headers of a `{url, headers}` item, as hosted: the request headers a custom cache key is made of. The keys here
 * are scheme, host, path and query and the Accept-Encoding variant (there are no custom keys by header, device
 * type, country or language: docs/cache.md), so Accept-Encoding names one variant (its encoding class, as a request
 * with it is keyed) and any other header is refused naming it: it could match no key, and a purge that silently
 * removes something other than what was named is worse than a clear no.
 */
function fileVariant(headers: unknown, i: number): string | undefined {
  if (typeof headers !== "object" || headers === null || Array.isArray(headers) || Object.values(headers).some((v) => typeof v !== "string"))
    throw EdgeErrors.purgeBadItem("files", i, '"headers" must be an object of header names to strings');
  let variant: string | undefined;
  for (const [name, value] of Object.entries(headers as Record<string, string>)) {
    if (name.toLowerCase() !== "accept-encoding")
      throw EdgeErrors.purgeBadItem(
        "files",
        i,
        `the header ${JSON.stringify(name.slice(0, 100))} is in no cache key here: keys are the URL and its Accept-Encoding variant (custom cache keys by header, CF-Device-Type, CF-IPCountry or Accept-Language are not provided); purge the URL without it`,
      );
    if (value.length > MAX_ITEM_CHARS) throw EdgeErrors.purgeBadItem("files", i, `Accept-Encoding must be at most ${MAX_ITEM_CHARS} characters`);
    variant = encodingClass(value);
  }
  return variant;
}

/** A purged URL as the cache keys it (scheme, host, path, query); without a scheme both are meant. */
function fileUrls(text: string, i: number, zoneName: string): string[] {
  const withScheme = /^https?:\/\//i.test(text);
  let u: URL;
  try {
    u = new URL(withScheme ? text : `http://${text}`);
  } catch {
    throw EdgeErrors.purgeBadItem("files", i, "must be a URL");
  }
  const host = u.hostname.toLowerCase().replace(/\.$/, "");
  if (!inZone(host, zoneName)) throw EdgeErrors.purgeBadItem("files", i, `${host} is not in the zone ${zoneName}`);
  const path = `${u.pathname}${u.search === "?" ? "" : u.search}`;
  // A URL with a port names the proxied object (keyed without it: the Host's port is not in the key) and a Worker's
  // Cache API object put under that port.
  const rests = u.port === "" ? [`${host}${path}`] : [`${host}${path}`, `${host}:${u.port}${path}`];
  return rests.flatMap((rest) => (withScheme ? [`${u.protocol}//${rest}`] : [`http://${rest}`, `https://${rest}`]));
}
