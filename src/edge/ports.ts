/**
 * What the edge needs from the DNS area, handed over by the composition root (src/platform.ts): it never reads DNS's
 * store. The origin of a name is what the DNS answer engine resolves for it, so DNS answers and the proxy never disagree.
 */
export interface EdgeZones {
  /** The zone's account, or undefined when there is no such zone. */
  accountOf(zoneId: string): string | undefined;
  /** Calls `listener` with the id of every zone deleted (through this node or another). */
  onDeleted(listener: (zoneId: string) => void): void;
  /** How the DNS server answers `host` (lowercase, no trailing dot), for the proxy. */
  originOf(host: string): OriginLookup;
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
