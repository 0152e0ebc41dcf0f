import type { CacheSettings } from "../ports.js";
import { RulesErrors } from "./errors.js";

/**
 * The `action_parameters` of `set_cache_settings` that the cache acts on, validated as hosted; any other field is
 * refused by name (never stored and ignored). The hosted API's wire shape is kept as given, so a GET answers what was
 * PUT; `toCacheSettings` turns it into the port's shape (edge/ports.ts).
 */
export type SetCacheSettingsParameters = Omit<CacheSettings, "cache_key"> & {
  cache_key?: {
    ignore_query_strings_order?: boolean;
    custom_key?: { query_string?: { include?: QueryStringList; exclude?: QueryStringList } };
  };
};
type QueryStringList = { list: string[] } | { all: true };

/** The hosted ceiling of TTLs (one year, in seconds). */
export const MAX_TTL = 31_536_000;
/** Ours: how many status code TTLs and query string names one rule may list. */
const MAX_STATUS_CODE_TTLS = 50;
const MAX_QUERY_STRING_NAMES = 100;

type Json = Record<string, unknown>;

/** `value` as an object whose keys are all among `known` (an unknown one is refused by name). */
function objectAt(value: unknown, pointer: string, known: readonly string[], notSupported: readonly string[] = []): Json {
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw RulesErrors.invalid(pointer, "must be an object");
  for (const key of Object.keys(value)) {
    if (known.includes(key)) continue;
    const at = `${pointer}/${key.slice(0, 64)}`;
    if (notSupported.includes(key)) throw RulesErrors.notSupported(at, `the setting ${key}`);
    throw RulesErrors.notSupported(at, `the field ${JSON.stringify(key.slice(0, 64))}`);
  }
  return value as Json;
}

function booleanAt(value: unknown, pointer: string): boolean {
  if (typeof value !== "boolean") throw RulesErrors.invalid(pointer, "must be true or false");
  return value;
}

function integerAt(value: unknown, pointer: string, min: number, max: number): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max)
    throw RulesErrors.invalid(pointer, `must be a whole number from ${min} to ${max}`);
  return value;
}

function modeAt<M extends string>(value: unknown, pointer: string, modes: readonly M[]): M {
  if (typeof value !== "string" || !(modes as readonly string[]).includes(value))
    throw RulesErrors.invalid(pointer, `must be one of ${modes.map((m) => `"${m}"`).join(", ")}`);
  return value as M;
}

/** Hosted settings of set_cache_settings this platform does not act on: refused by name. */
const NOT_SUPPORTED = [
  "additional_cacheable_ports",
  "cache_reserve",
  "origin_cache_control",
  "origin_error_page_passthru",
  "origin_range_requests",
  "read_timeout",
  "shared_dictionary",
  "strip_etags",
  "strip_last_modified",
  "strip_set_cookie",
  "vary",
];

export function parseCacheSettings(value: unknown, pointer: string): SetCacheSettingsParameters {
  const input = objectAt(value, pointer, ["cache", "edge_ttl", "browser_ttl", "cache_key", "respect_strong_etags", "serve_stale"], NOT_SUPPORTED);
  const out: SetCacheSettingsParameters = {};
  if (input.cache !== undefined) out.cache = booleanAt(input.cache, `${pointer}/cache`);
  if (input.edge_ttl !== undefined) out.edge_ttl = parseEdgeTtl(input.edge_ttl, `${pointer}/edge_ttl`);
  if (input.browser_ttl !== undefined) out.browser_ttl = parseBrowserTtl(input.browser_ttl, `${pointer}/browser_ttl`);
  if (input.cache_key !== undefined) out.cache_key = parseCacheKey(input.cache_key, `${pointer}/cache_key`);
  if (input.respect_strong_etags !== undefined) {
    out.respect_strong_etags = booleanAt(input.respect_strong_etags, `${pointer}/respect_strong_etags`);
    // The cache never changes an origin's ETag (it does not compress or transform bodies): strong ETags are always
    // respected, and `false` (weaken them) would be accepted and not acted on.
    if (!out.respect_strong_etags)
      throw RulesErrors.notSupported(`${pointer}/respect_strong_etags`, "respect_strong_etags false (this platform always keeps an origin's strong ETags)");
  }
  if (input.serve_stale !== undefined) {
    const stale = objectAt(input.serve_stale, `${pointer}/serve_stale`, ["disable_stale_while_updating"]);
    out.serve_stale = {};
    if (stale.disable_stale_while_updating !== undefined)
      out.serve_stale.disable_stale_while_updating = booleanAt(stale.disable_stale_while_updating, `${pointer}/serve_stale/disable_stale_while_updating`);
  }
  return out;
}

function parseEdgeTtl(value: unknown, pointer: string): NonNullable<CacheSettings["edge_ttl"]> {
  const input = objectAt(value, pointer, ["mode", "default", "status_code_ttl"]);
  const mode = modeAt(input.mode, `${pointer}/mode`, ["respect_origin", "bypass_by_default", "override_origin"] as const);
  const out: NonNullable<CacheSettings["edge_ttl"]> = { mode };
  if (mode === "override_origin") out.default = integerAt(input.default, `${pointer}/default`, 1, MAX_TTL);
  else if (input.default !== undefined) throw RulesErrors.invalid(`${pointer}/default`, 'is only taken with the mode "override_origin"');
  if (input.status_code_ttl !== undefined) {
    const at = `${pointer}/status_code_ttl`;
    if (!Array.isArray(input.status_code_ttl) || input.status_code_ttl.length > MAX_STATUS_CODE_TTLS)
      throw RulesErrors.invalid(at, `must be an array of at most ${MAX_STATUS_CODE_TTLS} entries`);
    out.status_code_ttl = input.status_code_ttl.map((entry: unknown, i) => {
      const p = `${at}/${i}`;
      const e = objectAt(entry, p, ["value", "status_code", "status_code_range"]);
      // As hosted: -1 is "no-store", 0 "no-cache", else seconds.
      const ttl: { status_code?: number; status_code_range?: { from?: number; to?: number }; value: number } = {
        value: integerAt(e.value, `${p}/value`, -1, MAX_TTL),
      };
      if ((e.status_code === undefined) === (e.status_code_range === undefined))
        throw RulesErrors.invalid(p, "takes either status_code or status_code_range (one of them)");
      if (e.status_code !== undefined) ttl.status_code = integerAt(e.status_code, `${p}/status_code`, 100, 599);
      else {
        const range = objectAt(e.status_code_range, `${p}/status_code_range`, ["from", "to"]);
        if (range.from === undefined && range.to === undefined) throw RulesErrors.invalid(`${p}/status_code_range`, "takes from, to or both");
        ttl.status_code_range = {};
        if (range.from !== undefined) ttl.status_code_range.from = integerAt(range.from, `${p}/status_code_range/from`, 100, 599);
        if (range.to !== undefined) ttl.status_code_range.to = integerAt(range.to, `${p}/status_code_range/to`, 100, 599);
        if ((ttl.status_code_range.from ?? 100) > (ttl.status_code_range.to ?? 599))
          throw RulesErrors.invalid(`${p}/status_code_range`, "from must not be above to");
      }
      return ttl;
    });
  }
  return out;
}

function parseBrowserTtl(value: unknown, pointer: string): NonNullable<CacheSettings["browser_ttl"]> {
  const input = objectAt(value, pointer, ["mode", "default"]);
  const mode = modeAt(input.mode, `${pointer}/mode`, ["respect_origin", "bypass", "override_origin"] as const);
  if (mode === "override_origin") return { mode, default: integerAt(input.default, `${pointer}/default`, 1, MAX_TTL) };
  if (input.default !== undefined) throw RulesErrors.invalid(`${pointer}/default`, 'is only taken with the mode "override_origin"');
  return { mode };
}

function parseCacheKey(value: unknown, pointer: string): NonNullable<SetCacheSettingsParameters["cache_key"]> {
  const input = objectAt(value, pointer, ["ignore_query_strings_order", "custom_key"], ["cache_by_device_type", "cache_deception_armor"]);
  const out: NonNullable<SetCacheSettingsParameters["cache_key"]> = {};
  if (input.ignore_query_strings_order !== undefined)
    out.ignore_query_strings_order = booleanAt(input.ignore_query_strings_order, `${pointer}/ignore_query_strings_order`);
  if (input.custom_key !== undefined) {
    const custom = objectAt(input.custom_key, `${pointer}/custom_key`, ["query_string"], ["cookie", "header", "host", "user"]);
    out.custom_key = {};
    if (custom.query_string !== undefined) {
      const at = `${pointer}/custom_key/query_string`;
      const qs = objectAt(custom.query_string, at, ["include", "exclude"]);
      if (qs.include !== undefined && qs.exclude !== undefined) throw RulesErrors.invalid(at, "takes include or exclude, not both");
      out.custom_key.query_string = {};
      if (qs.include !== undefined) out.custom_key.query_string.include = parseQueryStringList(qs.include, `${at}/include`);
      if (qs.exclude !== undefined) out.custom_key.query_string.exclude = parseQueryStringList(qs.exclude, `${at}/exclude`);
    }
  }
  return out;
}

function parseQueryStringList(value: unknown, pointer: string): QueryStringList {
  const input = objectAt(value, pointer, ["list", "all"]);
  if ((input.list === undefined) === (input.all === undefined)) throw RulesErrors.invalid(pointer, 'takes either "list" or "all": true');
  if (input.all !== undefined) {
    if (input.all !== true) throw RulesErrors.invalid(`${pointer}/all`, "must be true");
    return { all: true };
  }
  const list = input.list;
  if (!Array.isArray(list) || list.length > MAX_QUERY_STRING_NAMES || !list.every((n) => typeof n === "string" && n !== "" && n.length <= 256))
    throw RulesErrors.invalid(`${pointer}/list`, `must be an array of at most ${MAX_QUERY_STRING_NAMES} parameter names (1 to 256 characters)`);
  return { list: [...(list as string[])] };
}

/** The port's shape of a rule's parameters (edge/ports.ts): query string lists as names or "*". */
export function toCacheSettings(p: SetCacheSettingsParameters): CacheSettings {
  const { cache_key, ...rest } = p;
  const out: CacheSettings = rest;
  if (cache_key) {
    const key: NonNullable<CacheSettings["cache_key"]> = {};
    if (cache_key.ignore_query_strings_order !== undefined) key.ignore_query_strings_order = cache_key.ignore_query_strings_order;
    const qs = cache_key.custom_key?.query_string;
    if (cache_key.custom_key) {
      key.custom_key = {};
      if (qs) {
        key.custom_key.query_string = {};
        if (qs.include) key.custom_key.query_string.include = "all" in qs.include ? "*" : qs.include.list;
        if (qs.exclude) key.custom_key.query_string.exclude = "all" in qs.exclude ? "*" : qs.exclude.list;
      }
    }
    out.cache_key = key;
  }
  return out;
}
