import type { ServerResponse } from "node:http";
import { EdgeCodes } from "../errors.js";

/** An error page of the edge: what a browser sees for a hostname it serves nothing for, in the hosted style. */
export interface ErrorPage {
  status: number;
  /** The hosted platform's error number (EdgeCodes), or none (404, 421). */
  code?: number;
  title: string;
  detail: string;
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * Answers `page` as HTML. The page is ours, never a tenant's: it runs nothing (CSP `default-src 'none'`), is not
 * cached, and names the host as text only.
 */
export function sendErrorPage(res: ServerResponse, page: ErrorPage, host: string): void {
  const heading = page.code === undefined ? page.title : `Error ${page.code}: ${page.title}`;
  const body = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(heading)} | ${escapeHtml(host)}</title></head>
<body><h1>${escapeHtml(heading)}</h1><p>${escapeHtml(page.detail)}</p><p>Host: ${escapeHtml(host || "(none)")}</p></body></html>
`;
  if (res.headersSent) return void res.destroy();
  res.writeHead(page.status, {
    "content-type": "text/html; charset=utf-8",
    "content-length": Buffer.byteLength(body),
    "cache-control": "no-store",
    "content-security-policy": "default-src 'none'",
    "x-content-type-options": "nosniff",
    ...(page.code === undefined ? {} : { "cf-error-code": String(page.code) }),
  });
  res.end(res.req?.method === "HEAD" ? undefined : body);
}

/** The pages the edge answers itself. */
export const ErrorPages = {
  unknownHost: (): ErrorPage => ({
    status: 530,
    code: EdgeCodes.unknownHost,
    title: "DNS resolution error",
    detail: "This hostname is not served by this platform: it is in no zone of any account here.",
  }),
  // A name of a zone that nothing serves here: no Worker route or Custom Domain matches, and no proxied record gives
  // it an origin (a DNS-only record sends its visitors straight to its address, never through this edge). The page
  // says which of those to add, since a site's owner trying the edge usually forgot to turn proxied on.
  nothingServed: (): ErrorPage => ({
    status: 404,
    title: "Not found",
    detail:
      "Nothing is served here for this hostname: it has no proxied DNS record (a DNS-only record sends visitors straight to its address, not through this edge), and no Worker route or Custom Domain of its zone matches this request.",
  }),
  reserved: (): ErrorPage => ({
    status: 404,
    code: EdgeCodes.unknownHost,
    title: "Nothing is served here",
    detail: "This hostname is one of the platform's own and serves nothing over HTTP.",
  }),
  dashboardElsewhere: (dashboardHost: string): ErrorPage => ({
    status: 404,
    title: "Not found",
    detail: `The dashboard is served at ${dashboardHost}/dash/, not on this hostname.`,
  }),
  misdirected: (sni: string): ErrorPage => ({
    status: 421,
    title: "Misdirected Request",
    detail: `This connection was opened for ${sni} (TLS SNI) and answers only requests for that host; open a connection for the host you ask for.`,
  }),
};
