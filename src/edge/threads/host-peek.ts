/**
 * The Host of a connection's first request, read from its first bytes before any HTTP server has them (an edge
 * thread decides with it whether it serves the connection or hands it to the main thread).
 * - `{ host }`: the head is complete and has one Host field;
 * - `"more"`: the head is not complete yet and is still under `limit` bytes;
 * - `"none"`: anything else (no Host, two, a head past the limit, bytes that are not HTTP/1.x): the main thread
 *   answers such a connection, as it would have without threads.
 */
export function peekHost(buf: Buffer, limit: number): { host: string } | "more" | "none" {
  const end = buf.indexOf("\r\n\r\n");
  if (end === -1) return buf.length < limit ? "more" : "none";
  if (end > limit) return "none";
  const lines = buf.toString("latin1", 0, end).split("\r\n");
  if (!/^[A-Z]+ \S+ HTTP\/1\.[01]$/.test(lines[0])) return "none";
  let host: string | undefined;
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i];
    const colon = line.indexOf(":");
    if (colon === 4 && line.slice(0, 4).toLowerCase() === "host") {
      if (host !== undefined) return "none";
      host = line.slice(5).trim();
    }
  }
  return host === undefined || host === "" ? "none" : { host };
}
