import type { IncomingHttpHeaders } from "node:http";
import { HOP_BY_HOP, passedRequestHeaders } from "../../core/http/relay.js";

/** Headers the edge sets itself: a client's own are replaced (X-Forwarded-For and CDN-Loop are appended to). Host too. */
const EDGE_SET = new Set([
  "host",
  "proxy-authorization",
  "proxy-authenticate",
  "cf-connecting-ip",
  "cf-ray",
  "cf-visitor",
  "x-forwarded-proto",
  "cdn-loop",
  "x-forwarded-for",
]);

export interface ForwardingFacts {
  host: string;
  clientIp: string;
  scheme: "http" | "https";
  ray: string;
  /** The CDN-Loop token of this edge. */
  loopToken: string;
  /** Keep Upgrade and Connection (a WebSocket handshake passed through). */
  upgrade?: boolean;
}

/**
 * The request headers the origin gets: the client's, in their order, minus hop-by-hop ones, plus the forwarding
 * headers (CF-Connecting-IP, X-Forwarded-For appended, X-Forwarded-Proto, CF-Visitor, CF-Ray, CDN-Loop appended).
 * A flat [name, value, …] list, so repeated headers stay repeated.
 */
export function originRequestHeaders(rawHeaders: readonly string[], facts: ForwardingFacts): string[] {
  // Built without intermediate arrays: most requests carry neither X-Forwarded-For nor CDN-Loop, and this runs for
  // every proxied request (docs/benchmarks.md, "Edge proxy: where the latency goes").
  let forwardedFor: string | undefined;
  let loops: string | undefined;
  let kept: string[] | undefined;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const length = rawHeaders[i].length;
    // Only names as long as one looked for are lowercased: x-forwarded-for, cdn-loop, upgrade.
    if (length !== 15 && length !== 8 && length !== 7) continue;
    const name = rawHeaders[i].toLowerCase();
    const value = rawHeaders[i + 1];
    if (name === "x-forwarded-for") forwardedFor = forwardedFor === undefined ? value : `${forwardedFor}, ${value}`;
    else if (name === "cdn-loop") loops = loops === undefined ? value : `${loops}, ${value}`;
    // The client's Upgrade; not its Connection: the names it lists (`Upgrade, CF-Connecting-IP`) would tell the
    // origin's side to drop the edge's own headers. `Connection: Upgrade` is the edge's, after it.
    else if (facts.upgrade && name === "upgrade") (kept ??= []).push(rawHeaders[i], value);
  }
  // The one header policy of the edge's forwarding (core/http/relay.ts), with the edge's own headers set after.
  const set = ["host", facts.host];
  if (kept) {
    for (const v of kept) set.push(v);
    set.push("Connection", "Upgrade");
  }
  set.push(
    "cf-connecting-ip",
    facts.clientIp,
    "x-forwarded-for",
    forwardedFor === undefined ? facts.clientIp : `${forwardedFor}, ${facts.clientIp}`,
    "x-forwarded-proto",
    facts.scheme,
    "cf-visitor",
    facts.scheme === "https" ? VISITOR_HTTPS : VISITOR_HTTP,
    "cf-ray",
    facts.ray,
    "cdn-loop",
    loops === undefined ? facts.loopToken : `${loops}, ${facts.loopToken}`,
  );
  return passedRequestHeaders(rawHeaders, EDGE_SET, set);
}

const VISITOR_HTTP = JSON.stringify({ scheme: "http" });
const VISITOR_HTTPS = JSON.stringify({ scheme: "https" });

/** Whether the request passed through this edge already (its CDN-Loop names our token). */
export function looped(headers: IncomingHttpHeaders, loopToken: string): boolean {
  const v = headers["cdn-loop"];
  if (v === undefined) return false;
  return (Array.isArray(v) ? v.join(",") : v)
    .split(",")
    .map((t) => t.trim().split(";")[0].trim().toLowerCase())
    .includes(loopToken);
}

/**
 * Headers of an origin's answer the hosted edge does not pass on to the visitor (its "Cloudflare HTTP headers" page,
 * "Removed response headers"): nginx's X-Accel-* instructions to a proxy in front of it, which this edge does not act
 * on either (an X-Accel-Redirect is not followed, an X-Accel-Limit-Rate not applied).
 */
export const ORIGIN_ONLY_ANSWER_HEADERS: ReadonlySet<string> = new Set(["x-accel-buffering", "x-accel-charset", "x-accel-limit-rate", "x-accel-redirect"]);

/**
 * An origin's answer headers as the cache keeps them (an object, repeated ones as arrays): without the hop-by-hop
 * ones, those its Connection header lists and ORIGIN_ONLY_ANSWER_HEADERS.
 */
export function cacheableHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string | string[]> {
  const listed = new Set<string>();
  const conn = headers.connection;
  for (const v of Array.isArray(conn) ? conn : conn ? [conn] : []) for (const n of v.split(",")) listed.add(n.trim().toLowerCase());
  const out: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>;
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name) || listed.has(name) || ORIGIN_ONLY_ANSWER_HEADERS.has(name)) continue;
    out[name] = value;
  }
  return out;
}
