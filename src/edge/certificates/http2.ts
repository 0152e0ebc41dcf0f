import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from "node:http";
import { createServer, type Http2Server, type Http2ServerRequest, type Http2ServerResponse } from "node:http2";
import type { TLSSocket } from "node:tls";
import type { Logger } from "../../core/logger.js";

/**
 * Connection-specific header fields: HTTP/2 has none (RFC 9113 section 8.2.2; Node refuses to send them). The edge's
 * HTTP/1 code sets some (`connection: close` on a refusal, `transfer-encoding` relayed by a Worker): dropped here.
 */
const CONNECTION_SPECIFIC = new Set(["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "http2-settings", "te"]);

/** Streams one HTTP/2 connection may have open at once (Node's default is 2^32-1). */
const MAX_CONCURRENT_STREAMS = 128;
/** A session with no frame for this long is closed (gracefully: open streams finish), as the HTTP/1 port's keep-alive. */
const SESSION_IDLE_MS = 65_000;
/** A request head's fields, as on the HTTP/1 port (MAX_HEADER_BYTES there; HPACK-decoded size here). */
const MAX_HEADER_LIST_BYTES = 64 * 1024;

/**
 * HTTP/2 on the HTTPS port: connections whose ALPN chose `h2` are served here, and each request is handed to the
 * edge port's request listener (`serve`: core/http/app.ts, the dispatch by Host and everything after it) as the
 * HTTP/1 request it is: the pseudo-headers become Host, method and path, a body of unknown length is marked chunked
 * (as HTTP/1 would frame it), and the answer's connection-specific headers are left out. WebSockets over HTTP/2
 * (RFC 8441) are not offered: clients open them over HTTP/1.1.
 */
export function createHttp2Edge(opts: { serve: (req: IncomingMessage, res: ServerResponse) => void; log: Logger }): {
  serveConnection(socket: TLSSocket): void;
  close(): void;
} {
  const server: Http2Server = createServer({
    settings: { maxConcurrentStreams: MAX_CONCURRENT_STREAMS, maxHeaderListSize: MAX_HEADER_LIST_BYTES },
    maxHeaderListPairs: 1000,
    maxSessionMemory: 10,
  });
  server.on("request", (req: Http2ServerRequest, res: Http2ServerResponse) => {
    try {
      asHttp1(req, res);
    } catch (err) {
      opts.log.debug({ error: (err as Error).message }, "an HTTP/2 request could not be read as an HTTP/1 one");
      res.stream.close(0x1 /* PROTOCOL_ERROR */);
      return;
    }
    opts.serve(req as unknown as IncomingMessage, res as unknown as ServerResponse);
  });
  server.on("sessionError", (err) => opts.log.debug({ error: err.message }, "an HTTP/2 session on the HTTPS edge port failed"));
  const sessions = new Set<import("node:http2").ServerHttp2Session>();
  server.on("session", (session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
    session.setTimeout(SESSION_IDLE_MS, () => session.close());
  });
  return {
    serveConnection: (socket) => server.emit("connection", socket),
    // Open sessions end once their streams are done (GOAWAY); the edge port's close waits for their sockets.
    close: () => {
      for (const s of sessions) s.close();
    },
  };
}

/** Makes the compatibility API's request and response look as an HTTP/1 server's (in place: they are the same objects). */
function asHttp1(req: Http2ServerRequest, res: Http2ServerResponse): void {
  const h2 = req.headers;
  const method = h2[":method"];
  const path = h2[":path"];
  // CONNECT has no path (and is not served at the edge): refused as HTTP/1 would refuse a request without a target.
  if (typeof method !== "string" || typeof path !== "string") throw new Error("no :method or :path");
  const headers: Record<string, string | string[]> = Object.create(null);
  const rawHeaders: string[] = [];
  const authority = h2[":authority"];
  // RFC 9113 section 8.3.1: the authority stands for Host; a Host field, when sent, must agree and is used as sent.
  if (h2.host === undefined && typeof authority === "string") {
    headers.host = authority;
    rawHeaders.push("host", authority);
  }
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i];
    if (name.startsWith(":")) continue;
    const value = req.rawHeaders[i + 1];
    rawHeaders.push(name, value);
    const known = headers[name];
    if (known === undefined) headers[name] = name === "set-cookie" ? [value] : value;
    else if (Array.isArray(known)) known.push(value);
    else headers[name] = `${known}${name === "cookie" ? "; " : ", "}${value}`;
  }
  // A body without a length: framed as HTTP/1's chunked body is, so every reader sees there is one.
  if (!req.stream.endAfterHeaders && headers["content-length"] === undefined) {
    headers["transfer-encoding"] = "chunked";
    rawHeaders.push("transfer-encoding", "chunked");
  }
  Object.defineProperties(req, {
    headers: { value: headers, configurable: true },
    rawHeaders: { value: rawHeaders, configurable: true },
    method: { value: method, configurable: true, writable: true },
    url: { value: path, configurable: true, writable: true },
  });
  const setHeader = res.setHeader.bind(res);
  const appendHeader = res.appendHeader.bind(res);
  const writeHead = res.writeHead.bind(res) as (status: number, headers?: OutgoingHttpHeaders | [string, string][]) => Http2ServerResponse;
  Object.defineProperties(res, {
    setHeader: {
      value: (name: string, value: number | string | readonly string[]) => (CONNECTION_SPECIFIC.has(name.toLowerCase()) ? res : setHeader(name, value)),
    },
    appendHeader: {
      value: (name: string, value: string | readonly string[]) =>
        CONNECTION_SPECIFIC.has(name.toLowerCase()) ? res : appendHeader(name, value as string | string[]),
    },
    writeHead: {
      value: (status: number, message?: unknown, given?: unknown) => {
        // HTTP/2 has no reason phrase (Node warns about one): only the status and the fields are kept.
        const fields = typeof message === "string" ? given : message;
        return writeHead(status, fields === undefined ? undefined : withoutConnectionFields(fields as OutgoingHttpHeaders | readonly unknown[]));
      },
    },
    destroyed: { get: () => res.stream.destroyed, configurable: true },
  });
}

/** `fields` (an object, a flat [name, value, …] list or a list of pairs) as pairs, without connection-specific ones. */
function withoutConnectionFields(fields: OutgoingHttpHeaders | readonly unknown[]): [string, string][] {
  const pairs: [string, string][] = [];
  const add = (name: string, value: unknown) => {
    if (value === undefined || CONNECTION_SPECIFIC.has(name.toLowerCase())) return;
    if (Array.isArray(value)) for (const v of value) pairs.push([name, String(v)]);
    else pairs.push([name, String(value)]);
  };
  if (!Array.isArray(fields)) {
    for (const [name, value] of Object.entries(fields)) add(name, value);
  } else if (fields.length > 0 && Array.isArray(fields[0])) {
    for (const [name, value] of fields as [string, unknown][]) add(name, value);
  } else {
    for (let i = 0; i + 1 < fields.length; i += 2) add(String(fields[i]), fields[i + 1]);
  }
  return pairs;
}
