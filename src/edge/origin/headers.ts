import type { IncomingHttpHeaders } from "node:http";

/** Headers that describe one connection, never forwarded (RFC 9110 §7.6.1; Expect is answered by the edge itself), and Host, which the edge sets. */
const HOP_BY_HOP = new Set([
  "expect",
  "connection",
  "keep-alive",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "proxy-authorization",
  "proxy-authenticate",
  "host",
]);
/** A client may not pass these as the edge's own: they are replaced. */
const EDGE_SET = new Set(["cf-connecting-ip", "cf-ray", "cf-visitor", "x-forwarded-proto", "cdn-loop", "x-forwarded-for"]);

/** Names a Connection header lists (also hop-by-hop). */
function connectionListed(raw: readonly string[]): Set<string> {
  const out = new Set<string>();
  for (let i = 0; i < raw.length; i += 2)
    if (raw[i].toLowerCase() === "connection") for (const n of raw[i + 1].split(",")) if (n.trim()) out.add(n.trim().toLowerCase());
  return out;
}

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
  const listed = connectionListed(rawHeaders);
  const out: string[] = ["host", facts.host];
  const forwardedFor: string[] = [];
  const loops: string[] = [];
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i].toLowerCase();
    const value = rawHeaders[i + 1];
    if (name === "x-forwarded-for") forwardedFor.push(value);
    else if (name === "cdn-loop") loops.push(value);
    else if (facts.upgrade && (name === "upgrade" || name === "connection")) out.push(rawHeaders[i], value);
    else if (!HOP_BY_HOP.has(name) && !EDGE_SET.has(name) && !listed.has(name)) out.push(rawHeaders[i], value);
  }
  forwardedFor.push(facts.clientIp);
  loops.push(facts.loopToken);
  out.push(
    "cf-connecting-ip",
    facts.clientIp,
    "x-forwarded-for",
    forwardedFor.join(", "),
    "x-forwarded-proto",
    facts.scheme,
    "cf-visitor",
    JSON.stringify({ scheme: facts.scheme }),
    "cf-ray",
    facts.ray,
    "cdn-loop",
    loops.join(", "),
  );
  return out;
}

/** Whether the request passed through this edge already (its CDN-Loop names our token). */
export function looped(headers: IncomingHttpHeaders, loopToken: string): boolean {
  const v = headers["cdn-loop"];
  if (v === undefined) return false;
  return (Array.isArray(v) ? v.join(",") : v)
    .split(",")
    .map((t) => t.trim().split(";")[0].trim().toLowerCase())
    .includes(loopToken);
}

/** The origin's answer headers the client gets: all but hop-by-hop ones (and those its Connection lists). */
export function clientResponseHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string | string[]> {
  const listed = new Set<string>();
  const conn = headers.connection;
  for (const v of Array.isArray(conn) ? conn : conn ? [conn] : []) for (const n of v.split(",")) listed.add(n.trim().toLowerCase());
  const out: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>;
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name) || listed.has(name)) continue;
    out[name] = value;
  }
  return out;
}
