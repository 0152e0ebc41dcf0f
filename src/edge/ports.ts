/**
 * What the edge needs from the DNS area, handed over by the composition root (src/platform.ts): it never reads DNS's
 * store. The origin of a name is what the DNS answer engine resolves for it, so DNS answers and the proxy never disagree.
 */
export interface EdgeZones {
  /** The zone's account, or undefined when there is no such zone. */
  accountOf(zoneId: string): string | undefined;
  /** The zone's name (lowercase, no trailing dot), or undefined when there is no such zone. */
  nameOf(zoneId: string): string | undefined;
  /** Calls `listener` with the id of every zone deleted (through this node or another). */
  onDeleted(listener: (zoneId: string) => void): void;
  /** How the DNS server answers `host` (lowercase, no trailing dot), for the proxy. */
  originOf(host: string): OriginLookup;
  /**
   * A number that changes whenever what `originOf`, `accountOf` or `nameOf` answer may have changed: any zone or record
   * created, changed or deleted, through this node or another (read from the store after the bus's notice). The edge
   * keeps per-host answers (hostnames/host-memo.ts) while it stays the same.
   */
  generation(): number;
}

/**
 * Where a request for a hostname goes:
 * - `none`: the name is in no zone here;
 * - `unproxied`: in a zone here, but the zone is paused, or the name has no record or only DNS-only ones (never forwarded);
 * - `proxied`: its origin is these addresses (A/AAAA records, also at the end of a CNAME chain inside our zones) and
 *   these hostnames (a CNAME target outside our zones, resolved with the system resolver);
 * - `cross-account`: a proxied CNAME whose chain reaches a zone of another account (hosted: error 1014, "CNAME
 *   Cross-User Banned"), never forwarded: the other account's origin addresses are not the caller's to use.
 */
export type OriginLookup =
  | { kind: "none" }
  | { kind: "unproxied"; zoneId: string; accountId: string; why: "paused" | "dns-only" | "no-record" }
  | { kind: "proxied"; zoneId: string; accountId: string; addresses: string[]; hostnames: string[] }
  | { kind: "cross-account"; zoneId: string; accountId: string };

/** A request as rule expressions see it (the hosted fields `http.host`, `http.request.uri.path`, …). */
export interface RuleRequest {
  scheme: "http" | "https";
  /** Lowercase, no port, no trailing dot. */
  host: string;
  /** The path as requested, without the query. */
  path: string;
  /** The query without its `?` ("" when none). */
  query: string;
  method: string;
}

/**
 * The `action_parameters` of the `set_cache_settings` rules that match a request, merged in rule order as hosted
 * (a later matching rule overrides a field an earlier one set). The hosted Rulesets API shape, snake_case as on the
 * wire; only the fields the platform acts on (edge/rules refuses any other with a 400).
 */
export interface CacheSettings {
  /** true: eligible for cache (also HTML: "cache everything"); false: bypass. */
  cache?: boolean;
  edge_ttl?: {
    mode: "respect_origin" | "bypass_by_default" | "override_origin";
    /** Seconds, for `override_origin` (and the default when the origin says nothing). */
    default?: number;
    status_code_ttl?: { status_code?: number; status_code_range?: { from?: number; to?: number }; value: number }[];
  };
  browser_ttl?: { mode: "respect_origin" | "bypass" | "override_origin"; default?: number };
  cache_key?: {
    ignore_query_strings_order?: boolean;
    custom_key?: { query_string?: { include?: string[] | "*"; exclude?: string[] | "*" } };
  };
  respect_strong_etags?: boolean;
  serve_stale?: { disable_stale_while_updating?: boolean };
}

/** Cache Rules (edge/rules), as the cache (edge/cache) asks them: in memory, kept current by the bus. */
export interface CacheRules {
  /** Whether the zone has any rule (without one, `settingsFor` answers no settings: the cache then builds no request for it). */
  hasRules(zoneId: string): boolean;
  settingsFor(zoneId: string, request: RuleRequest): CacheSettings;
}

/**
 * A Custom Domain as the certificates see it (Workers owns Custom Domains and hands them over through
 * `CustomDomains`, wired in platform.ts): the hostname a certificate is ordered and served for, and its account.
 */
export interface CustomDomain {
  hostname: string;
  accountId: string;
}

/** What the certificates (edge/certificates/) need from Workers' Custom Domains. */
export interface CustomDomains {
  /** Every attached Custom Domain as stored. */
  all(): Promise<CustomDomain[]>;
  /** The Custom Domain the edge serves at `hostname` now (its route table), if any. */
  at(hostname: string): CustomDomain | undefined;
  /** Calls `listener` whenever Workers read its routes and Custom Domains again. */
  onReload(listener: () => void): void;
}
