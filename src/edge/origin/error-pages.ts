import { STATUS_CODES, type ServerResponse } from "node:http";
import type { Duplex } from "node:stream";

/**
 * The edge's error pages, by their hosted codes: 52x when the origin failed, 1000/1001 when the name cannot be
 * forwarded at all, and 508 (ours) for a request that looped back into the edge.
 */
export const EDGE_ERRORS = {
  520: { status: 520, title: "Web server is returning an unknown error", why: "The origin answered with an empty, invalid or unexpected response." },
  521: { status: 521, title: "Web server is down", why: "The origin refused the connection." },
  522: { status: 522, title: "Connection timed out", why: "The connection to the origin did not complete in time." },
  523: { status: 523, title: "Origin is unreachable", why: "The origin's address could not be found." },
  524: { status: 524, title: "A timeout occurred", why: "The origin accepted the connection but did not answer in time." },
  525: { status: 525, title: "SSL handshake failed", why: "The TLS handshake with the origin failed." },
  526: { status: 526, title: "Invalid SSL certificate", why: "The origin's certificate could not be verified (SSL mode strict)." },
  1000: { status: 403, title: "DNS points to prohibited IP", why: "The name's record points to an address the edge may not connect to." },
  1001: { status: 530, title: "DNS resolution error", why: "The name is not proxied by the edge: its zone is paused, or it has no proxied record." },
  1014: { status: 403, title: "CNAME Cross-User Banned", why: "The name's CNAME points into a zone of another account." },
  508: { status: 508, title: "Loop detected", why: "The request has passed through this edge already (CDN-Loop)." },
} as const;

export type EdgeErrorCode = keyof typeof EDGE_ERRORS;

const escape = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The HTML page: the code, what happened, the host and the ray id (what a user quotes to the site's owner). */
export function errorPage(code: EdgeErrorCode, host: string, ray: string): string {
  const e = EDGE_ERRORS[code];
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>${escape(host)} | ${code}: ${e.title}</title></head>
<body><h1>Error ${code}</h1><h2>${e.title}</h2><p>${e.why}</p>
<p>Host: ${escape(host)}</p><p>Ray ID: <code>${ray}</code></p></body></html>
`;
}

/** Answers the error page (unless the answer has begun: then the connection is cut, so the client sees it broken). */
export function sendErrorPage(res: ServerResponse, code: EdgeErrorCode, host: string, ray: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = errorPage(code, host, ray);
  const e = EDGE_ERRORS[code];
  // The standard reason where the status has one (403 Forbidden); the page's title for those Node has none for
  // (52x, 530), where it would write "unknown" (the upgrade path below writes the title too).
  res.writeHead(e.status, STATUS_CODES[e.status] ?? e.title, {
    "content-type": "text/html; charset=utf-8",
    "content-length": Buffer.byteLength(body),
    "cache-control": "private, max-age=0, no-store, no-cache, must-revalidate",
    // As the hostname plan's pages: a tenant's hostname never runs anything of ours.
    "content-security-policy": "default-src 'none'",
    "cf-ray": ray,
  });
  res.end(body);
}

/** The same page on a connection that asked for an upgrade (no ServerResponse there). */
export function writeErrorPage(socket: Duplex, code: EdgeErrorCode, host: string, ray: string): void {
  const body = errorPage(code, host, ray);
  const e = EDGE_ERRORS[code];
  socket.end(
    `HTTP/1.1 ${e.status} ${e.title}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\ncf-ray: ${ray}\r\nconnection: close\r\n\r\n${body}`,
  );
}
