import { connect } from "node:net";

/** The first answer on a connection, and whether the server then closed it. */
export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** The server closed the connection (within the deadline). */
  closed: boolean;
  /** Bytes as received, for messages. */
  raw: string;
  /** A socket error seen while sending or reading (a reset, a refused connection). */
  error?: string;
}

/** The status, headers and body of the first HTTP/1.1 answer in `raw`. */
export function parseAnswer(raw: string): Omit<RawAnswer, "closed" | "error"> {
  const headEnd = raw.indexOf("\r\n\r\n");
  const head = headEnd < 0 ? raw : raw.slice(0, headEnd);
  const [statusLine, ...lines] = head.split("\r\n");
  const headers: Record<string, string> = {};
  for (const l of lines) {
    const colon = l.indexOf(":");
    if (colon > 0) headers[l.slice(0, colon).trim().toLowerCase()] = l.slice(colon + 1).trim();
  }
  const length = Number(headers["content-length"] ?? NaN);
  const rest = headEnd < 0 ? "" : raw.slice(headEnd + 4);
  const body = Number.isFinite(length) ? rest.slice(0, length) : rest;
  return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine ?? "")?.[1] ?? 0), headers, body, raw };
}

/**
 * Sends bytes as they are on a fresh connection and reads until the server closes it or the deadline passes (a
 * hang guard: requests with a bad head are answered at once). For what an HTTP client will not send: a URL of
 * 40 KB, a request line with raw bytes, broken framing.
 */
export function rawRequest(port: number, bytes: Buffer | string, deadlineMs = 10_000, opts: { halfClose?: boolean } = {}): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let error: string | undefined;
    let closed = false;
    // halfClose: the client says it has nothing more to send, so an incomplete request is known to be incomplete.
    const socket = connect(port, "127.0.0.1", () => (opts.halfClose ? socket.end(bytes) : socket.write(bytes)));
    const finish = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ ...parseAnswer(Buffer.concat(chunks).toString("latin1")), closed, error });
    };
    const timer = setTimeout(finish, deadlineMs);
    socket.on("data", (d: Buffer) => chunks.push(d));
    socket.on("error", (e: NodeJS.ErrnoException) => (error = e.code ?? e.message));
    socket.on("close", () => {
      closed = true;
      finish();
    });
  });
}
