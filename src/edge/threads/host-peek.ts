/**
 * The Host of a connection's first request, read from its first bytes before any HTTP server has them (an edge
 * thread decides with it whether it serves the connection or hands it to the main thread).
 * - `{ host }`: the head is complete and has one Host field;
 * - `"more"`: the head is not complete yet, is still under `limit` bytes and starts as a request does;
 * - `"none"`: anything else (no Host, two, a head past the limit, bytes that are not HTTP/1.x): the main thread
 *   answers such a connection, as it would have without threads.
 * Whatever Node's HTTP parser could read otherwise than this (a field folded onto the next line, whitespace before a
 * colon, a lone CR or LF, a Host with bytes no hostname has) is "none" too: the thread never serves a connection whose
 * Host it and Node might disagree on.
 */
export function peekHost(buf: Buffer, limit: number): { host: string } | "more" | "none" {
  const end = buf.indexOf("\r\n\r\n");
  if (end === -1) {
    // A TLS ClientHello, binary, a lower-case method: not a request, whatever comes next.
    if (!REQUEST_START.test(buf.toString("latin1", 0, Math.min(buf.length, 21)))) return "none";
    return buf.length < limit ? "more" : "none";
  }
  if (end > limit) return "none";
  const lines = buf.toString("latin1", 0, end).split("\r\n");
  if (!/^[A-Z]+ \S+ HTTP\/1\.[01]$/.test(lines[0])) return "none";
  let host: string | undefined;
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i];
    const colon = line.indexOf(":");
    // No name, no colon, a name that is not a token (obs-fold's leading whitespace, `Host :`), a lone CR or LF.
    if (colon < 1 || !TOKEN.test(line.slice(0, colon)) || /[\r\n]/.test(line)) return "none";
    if (colon === 4 && line.slice(0, 4).toLowerCase() === "host") {
      if (host !== undefined) return "none";
      // Node strips spaces and tabs around a field's value, nothing else (String.trim would strip a NBSP too).
      host = line.slice(5).replace(/^[ \t]+|[ \t]+$/g, "");
    }
  }
  return host === undefined || !/^[\x21-\x7e]+$/.test(host) ? "none" : { host };
}

/** A header field's name (RFC 9110's token). */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** The first bytes of a request line: a method (upper case letters) and then its space. */
const REQUEST_START = /^(?:[A-Z]{1,20} |[A-Z]{0,20}$)/;
