import { STATUS_CODES, type IncomingMessage, type ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import type { FastifyError } from "fastify";
import { CoreErrors, type EdgeError } from "../errors.js";
import { toEnvelope } from "../errors/render.js";

/**
 * Requests that are wrong before any route sees them: a URL or header block over the limits, a path that is not
 * percent-encoded UTF-8, bytes that are not HTTP. Each gets a v4 envelope with a status and a code, like every
 * other refusal, instead of Node's or Fastify's own bodies.
 */

/** Longest URL (path and query) any surface accepts. An R2 key of 1,024 bytes is at most 3 KB percent-encoded. */
export const MAX_URL_BYTES = 16 * 1024;
/** Largest request head (request line and headers) Node's parser reads: room for a maximal URL and big cookies. */
export const MAX_HEADER_BYTES = 32 * 1024;
/** How long a refused connection may keep sending (its bytes are read and dropped) before it is closed. */
const LINGER_MS = 2_000;

export const uriTooLong = () => CoreErrors.uriTooLong(MAX_URL_BYTES);
export const badPath = CoreErrors.badPath;

/** True when every `%` in a path starts an escape and the escapes decode to UTF-8 (decodeURIComponent's rule). */
export function isWellFormedPath(path: string): boolean {
  if (!path.includes("%")) return true;
  try {
    decodeURIComponent(path);
    return true;
  } catch {
    return false;
  }
}

/** An envelope as a raw HTTP/1.1 answer that closes the connection, for a socket no response object owns. */
function rawAnswer(err: EdgeError): string {
  const body = JSON.stringify(toEnvelope(err));
  return (
    `HTTP/1.1 ${err.status} ${STATUS_CODES[err.status]}\r\ncontent-type: application/json\r\n` +
    `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`
  );
}

/** Node's parser error, with the chunk it was parsing and how far into it the error came. */
export type ParserError = Error & { code?: string; bytesParsed?: number; rawPacket?: Buffer };

/**
 * A header block over the limit is a 414 when the line being read is the request line (its URL is what is long),
 * else a 431. The parser does not say which, so the chunk it was parsing is looked at: the line that overflowed
 * starts after the last line break before the error; a request line starts with a method and a space, a header
 * line never has a space before its colon. When the URL is longer than one chunk the start of the line is not in
 * the chunk and the answer is 431, which is still true (the head as a whole is too large).
 */
function headOverflow(err: ParserError): EdgeError {
  const packet = err.rawPacket;
  if (packet) {
    const end = Math.min(err.bytesParsed ?? packet.length, packet.length);
    const lineStart = end > 0 ? packet.lastIndexOf(0x0a, end - 1) + 1 : 0;
    const start = packet.toString("latin1", lineStart, Math.min(lineStart + 32, end));
    if (/^[A-Z]+ (\/|\*|https?:\/\/)/.test(start)) return uriTooLong();
  }
  return CoreErrors.headersTooLarge(MAX_HEADER_BYTES);
}

/** The refusal for an error of Node's HTTP parser (exported for its unit test). */
export function parserErrorAnswer(err: ParserError): EdgeError {
  switch (err.code) {
    case "HPE_HEADER_OVERFLOW":
      return headOverflow(err);
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return CoreErrors.requestHeadTimeout();
    case "HPE_INVALID_URL":
      return CoreErrors.invalidUrlCharacters();
    default:
      return CoreErrors.notHttp(err.code);
  }
}

/** Writes a refusal on a socket that no response owns any more, then lets the client finish sending for a moment. */
function refuseAndClose(socket: Duplex, answer: string): void {
  if (socket.destroyed) return;
  // Closing with unread bytes makes the kernel send a reset, which can destroy the answer before the client
  // reads it: what the client still sends is read and dropped until it closes its side (both sides ended, the
  // socket closes by itself), or for LINGER_MS at most.
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  socket.once("close", () => clearTimeout(timer));
  socket.on("error", () => socket.destroy());
  socket.on("data", () => {});
  socket.resume();
  if (socket.writable) socket.end(answer);
  else socket.destroy();
}

/** Answers `err` as an envelope on a socket that no response object owns (an upgrade request), then closes it. */
export function refuseOnSocket(socket: Duplex, err: EdgeError): void {
  refuseAndClose(socket, rawAnswer(err));
}

/** How long a refusal waits for the answer to an earlier pipelined request before the connection is cut. */
const IN_FLIGHT_MS = 30_000;

/**
 * Node's `clientError`: the request could not be parsed. Answers the envelope with `Connection: close`.
 * - An answer to an earlier, complete request still being written on the connection (pipelining) goes first, so
 *   answers stay in order.
 * - When the request that broke is the one being answered (its chunked body was malformed), its body can never
 *   end: the refusal goes out at once, unless that answer has started (then the connection is cut, as a half
 *   answer cannot be followed by another), and the request is ended so its route stops waiting for the body.
 */
export function answerClientError(error: Error, socket: Duplex): void {
  const err = error as ParserError;
  if (err.code === "ECONNRESET" || socket.destroyed) return;
  const answer = rawAnswer(parserErrorAnswer(err));
  const inFlight = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
  if (!inFlight || inFlight.writableFinished) return refuseAndClose(socket, answer);
  if (inFlight.req?.complete) {
    const cap = setTimeout(() => socket.destroy(), IN_FLIGHT_MS);
    inFlight.once("finish", () => {
      clearTimeout(cap);
      refuseAndClose(socket, answer);
    });
    return;
  }
  abandonRequest(inFlight, answer);
}

/**
 * Ends a request whose body is still arriving (a broken body, one too slow): the refusal goes out unless the
 * answer has started (then the connection is only cut, as a half answer cannot be followed by another), and once
 * it is handed to the kernel the request is destroyed, which closes the connection and makes its route stop
 * waiting for the body. The close does not wait for the client: its body could go on arriving for as long as it
 * likes, and that is what it is refused for.
 */
function abandonRequest(res: ServerResponse, answer: string): void {
  const socket = res.socket;
  if (!socket || socket.destroyed) return;
  if (res.headersSent || !socket.writable) {
    res.req.destroy();
    return;
  }
  socket.on("error", () => socket.destroy());
  socket.end(answer, () => res.req.destroy());
}

/** Refuses a request whose body is still arriving, with `err` as its answer (see abandonRequest). */
export function refuseInFlight(res: ServerResponse, err: EdgeError): void {
  abandonRequest(res, rawAnswer(err));
}

/** Fastify's own refusals before routing (a path that does not decode, a parameter over its length). */
export function frameworkErrorAnswer(err: FastifyError): EdgeError {
  switch (err.code) {
    case "FST_ERR_BAD_URL":
      return badPath();
    case "FST_ERR_MAX_PARAM_LENGTH":
      return uriTooLong();
    default:
      return CoreErrors.badRequest(err.message);
  }
}

/** The URL limit, checked before any surface (v4 API, AI gateway, worker traffic) sees the request. */
export function refuseLongUrl(req: IncomingMessage, res: ServerResponse): boolean {
  if ((req.url?.length ?? 0) <= MAX_URL_BYTES) return false;
  answerAndClose(res, uriTooLong());
  return true;
}

/** Answers a request with `err` and closes its connection after the answer; the request's body is not read. */
export function answerAndClose(res: ServerResponse, err: EdgeError): void {
  const body = JSON.stringify(toEnvelope(err));
  res.writeHead(err.status, { "content-type": "application/json", "content-length": Buffer.byteLength(body), connection: "close" });
  res.end(body);
}
