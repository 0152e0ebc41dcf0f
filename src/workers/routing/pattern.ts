/**
 * Route patterns as the hosted platform writes them (`[scheme://][*]host/path[*]`): `*` only at the start of the host
 * and at the end of the path, no query. A scheme is accepted and not matched on: the edge port cannot tell a request
 * that reached a fronting proxy over HTTPS from one over HTTP (docs/workers.md, "Routes").
 */
export interface ParsedPattern {
  /** The host without its wildcard, lowercase: `example.com` for `*.example.com`. */
  host: string;
  /** `exact`: that host only; `subdomains`: `*.host`; `host-and-subdomains`: `*host`. */
  hostMatch: "exact" | "subdomains" | "host-and-subdomains";
  /** The path without its trailing `*`. */
  path: string;
  /** True when the path ends in `*` (a prefix), false when the request's path and query must equal it. */
  pathPrefix: boolean;
}

const LABEL = /^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$/;
const MAX_PATTERN_CHARS = 1024;
const MAX_HOSTNAME_CHARS = 253;

/** The parsed pattern, or why it is not one (a sentence for the API's answer). */
export function parsePattern(raw: string): ParsedPattern | string {
  if (raw.length > MAX_PATTERN_CHARS) return `a route pattern has at most ${MAX_PATTERN_CHARS} characters`;
  const withoutScheme = raw.trim().replace(/^https?:\/\//i, "");
  const slash = withoutScheme.indexOf("/");
  if (slash < 0) return "a route pattern needs a path, e.g. example.com/* (a hostname alone is a Custom Domain)";
  let host = withoutScheme.slice(0, slash).toLowerCase();
  let path = withoutScheme.slice(slash);
  let hostMatch: ParsedPattern["hostMatch"] = "exact";
  if (host.startsWith("*.")) [hostMatch, host] = ["subdomains", host.slice(2)];
  else if (host.startsWith("*")) [hostMatch, host] = ["host-and-subdomains", host.slice(1)];
  if (host.includes("*")) return "a wildcard (*) may only start the host, as in *.example.com/*";
  if (host.includes(":")) return "a route pattern has no port";
  if (host.endsWith(".")) host = host.slice(0, -1);
  if (!validHostname(host)) return `"${host}" is not a valid hostname`;
  if (path.includes("?") || path.includes("#")) return "a route pattern may not contain a query string";
  const pathPrefix = path.endsWith("*");
  if (pathPrefix) path = path.slice(0, -1);
  if (path.includes("*")) return "a wildcard (*) may only end the path, as in example.com/images/*";
  return { host, hostMatch, path, pathPrefix };
}

/** The label a DNS-01 challenge puts before a hostname (`_acme-challenge.<hostname>`, RFC 8555 section 8.4). */
export const ACME_CHALLENGE_PREFIX = "_acme-challenge.";
/**
 * The longest Custom Domain: its certificate's challenge name must still be a DNS name (253 characters), or every
 * order fails and writes a name no zone transfer can carry.
 */
export const MAX_CUSTOM_DOMAIN_CHARS = MAX_HOSTNAME_CHARS - ACME_CHALLENGE_PREFIX.length;

/** A DNS hostname of at least two labels (lowercase, no trailing dot). */
export function validHostname(host: string): boolean {
  if (host.length === 0 || host.length > MAX_HOSTNAME_CHARS) return false;
  const labels = host.split(".");
  return labels.length >= 2 && labels.every((l) => LABEL.test(l));
}

/** Whether `host` is the zone's name or a name under it. */
export const inZone = (host: string, zoneName: string) => host === zoneName || host.endsWith(`.${zoneName}`);

/** What the edge dispatches to: a Worker of an account, or nothing (a route without a script turns Workers off there). */
export interface RouteTarget {
  accountId: string;
  script: string | null;
}

interface Entry extends RouteTarget {
  path: string;
  pathPrefix: boolean;
  /** For wildcard hosts: true when the pattern's own host does not match (`*.example.com`). */
  subdomainsOnly: boolean;
}

/** Exact paths first, then longer prefixes before shorter ones: the first entry that matches is the most specific. */
const bySpecificity = (a: Entry, b: Entry) =>
  Number(a.pathPrefix) - Number(b.pathPrefix) || b.path.length - a.path.length || Number(b.subdomainsOnly) - Number(a.subdomainsOnly);

const matchesPath = (e: Entry, target: string) => (e.pathPrefix ? target.startsWith(e.path) : target === e.path);

/**
 * Routes and Custom Domains of the whole platform, indexed for the edge port: a request costs one Map lookup per
 * label of its Host plus the path checks of the patterns on those names. Custom Domains come first (as hosted: they
 * take precedence over routes on the same hostname), then routes on the exact host, then wildcard hosts from the
 * longest suffix to the shortest; on one name, exact paths before prefixes, longer prefixes before shorter.
 */
export class RouteIndex {
  private readonly domains = new Map<string, RouteTarget>();
  private readonly exact = new Map<string, Entry[]>();
  private readonly wildcard = new Map<string, Entry[]>();

  constructor(routes: Iterable<{ pattern: ParsedPattern; target: RouteTarget }>, domains: Iterable<{ hostname: string; target: RouteTarget }>) {
    for (const d of domains) this.domains.set(d.hostname, d.target);
    for (const { pattern: p, target } of routes) {
      const entry: Entry = { ...target, path: p.path, pathPrefix: p.pathPrefix, subdomainsOnly: p.hostMatch === "subdomains" };
      const map = p.hostMatch === "exact" ? this.exact : this.wildcard;
      const list = map.get(p.host) ?? [];
      list.push(entry);
      map.set(p.host, list);
    }
    for (const list of [...this.exact.values(), ...this.wildcard.values()]) list.sort(bySpecificity);
  }

  get size(): number {
    return this.domains.size + this.exact.size + this.wildcard.size;
  }

  /**
   * The target of a request: `host` as the Host header gave it (any case, maybe a port or a trailing dot), `target`
   * the request line's path and query. Undefined when no route or domain matches.
   */
  match(host: string | undefined, target: string): RouteTarget | undefined {
    if (!host || this.size === 0) return undefined;
    const h = normalHost(host);
    // No route or domain is longer than a DNS name (validHostname); walking a longer Host's suffixes would hash each
    // (a 32 KiB head holds 16,000 labels: 280 ms of the event loop for one request).
    if (h.length > MAX_HOSTNAME_CHARS) return undefined;
    const domain = this.domains.get(h);
    if (domain) return domain;
    const exact = this.exact.get(h);
    if (exact) for (const e of exact) if (matchesPath(e, target)) return e;
    for (let name = h, own = true; ; own = false) {
      const list = this.wildcard.get(name);
      if (list) for (const e of list) if ((!own || !e.subdomainsOnly) && matchesPath(e, target)) return e;
      const dot = name.indexOf(".");
      if (dot < 0) return undefined;
      name = name.slice(dot + 1);
    }
  }

  /** Whether `match` may answer a target for `host` on some path: the same walk, without the paths. */
  mayMatch(host: string | undefined): boolean {
    if (!host || this.size === 0) return false;
    const h = normalHost(host);
    if (h.length > MAX_HOSTNAME_CHARS) return false;
    if (this.domains.has(h) || this.exact.has(h)) return true;
    for (let name = h; ;) {
      if (this.wildcard.has(name)) return true;
      const dot = name.indexOf(".");
      if (dot < 0) return false;
      name = name.slice(dot + 1);
    }
  }
}

/** A Host header's name: lowercase, without a port or a trailing dot. */
function normalHost(host: string): string {
  let h = host;
  if (h.charCodeAt(0) === 91 /* [ */) return h.toLowerCase(); // an IPv6 literal is never a routed name
  const colon = h.lastIndexOf(":");
  if (colon >= 0) h = h.slice(0, colon);
  if (h.endsWith(".")) h = h.slice(0, -1);
  return h.toLowerCase();
}
