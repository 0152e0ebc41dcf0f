import type { Socket } from "node:net";

/** TLS record content type of a handshake message, and the handshake type of a ClientHello (RFC 8446 section 4). */
const HANDSHAKE_RECORD = 0x16;
const CLIENT_HELLO = 0x01;
const SERVER_NAME_EXTENSION = 0x0000;
const HOST_NAME = 0x00;
/**
 * The most bytes of records read before the ClientHello must be whole. Browsers' hellos are under 2 KiB (about
 * 1.8 KiB with a post-quantum key share); a larger one is read as having no name, and gets the defaults' bounds.
 */
const MAX_HELLO_BYTES = 32 * 1024;

/** What the peek found: the ClientHello's server name (SNI), or none (no name, not TLS, or not a whole hello). */
export type PeekedHello = { servername: string | undefined };

/**
 * Reads a new connection's first bytes up to the end of its ClientHello, without consuming them (they are put
 * back with `unshift`: Node's TLS socket reads what its TCP socket has buffered first), and answers the SNI name,
 * so the connection can be handed to a TLS server with that name's protocol bounds (tls-port.ts): OpenSSL settles
 * the version before any SNI callback runs. A hello split over several records is reassembled. `done` is called
 * once, unless the socket closes or `timeoutMs` passes first (then it is destroyed).
 */
export function peekClientHello(socket: Socket, timeoutMs: number, done: (hello: PeekedHello) => void): void {
  const chunks: Buffer[] = [];
  let size = 0;
  const finish = (servername: string | undefined) => {
    cleanup();
    socket.pause();
    const buffered = Buffer.concat(chunks, size);
    if (buffered.length > 0) socket.unshift(buffered);
    done({ servername });
  };
  const onData = (chunk: Buffer) => {
    chunks.push(chunk);
    size += chunk.length;
    const parsed = parseClientHello(chunks.length === 1 ? chunk : Buffer.concat(chunks, size));
    if (parsed === "more" && size < MAX_HELLO_BYTES) return;
    finish(parsed === "more" || parsed === "invalid" ? undefined : parsed.servername);
  };
  const onEnd = () => finish(undefined);
  const onClose = () => cleanup();
  const onError = () => socket.destroy();
  const timer = setTimeout(() => {
    cleanup();
    socket.destroy();
  }, timeoutMs);
  const cleanup = () => {
    clearTimeout(timer);
    socket.removeListener("data", onData);
    socket.removeListener("end", onEnd);
    socket.removeListener("close", onClose);
    socket.removeListener("error", onError);
  };
  socket.on("data", onData);
  socket.once("end", onEnd);
  socket.once("close", onClose);
  socket.on("error", onError);
}

/**
 * The server name of the ClientHello at the start of `data` (TLS records, RFC 8446 sections 4.1.2 and 5.1; RFC 6066
 * section 3): "more" while it is not whole yet, "invalid" when these bytes are not one.
 */
export function parseClientHello(data: Buffer): { servername: string | undefined } | "more" | "invalid" {
  // The handshake bytes, from as many records as it takes.
  const records: Buffer[] = [];
  let handshakeLength = -1;
  let have = 0;
  let at = 0;
  while (handshakeLength < 0 || have < handshakeLength + 4) {
    if (data.length < at + 5) return "more";
    if (data[at] !== HANDSHAKE_RECORD || data[at + 1] !== 0x03) return "invalid";
    const length = data.readUInt16BE(at + 3);
    if (length === 0) return "invalid";
    if (data.length < at + 5 + length) return "more";
    records.push(data.subarray(at + 5, at + 5 + length));
    have += length;
    at += 5 + length;
    if (handshakeLength < 0 && have >= 4) {
      const first = records.length === 1 ? records[0] : Buffer.concat(records, have);
      if (first[0] !== CLIENT_HELLO) return "invalid";
      handshakeLength = first.readUIntBE(1, 3);
      if (handshakeLength + 4 > MAX_HELLO_BYTES) return "invalid";
    }
  }
  // Nearly always one record: no copy then.
  const hello = (records.length === 1 ? records[0] : Buffer.concat(records, have)).subarray(4, 4 + handshakeLength);
  try {
    return { servername: serverName(hello) };
  } catch {
    return "invalid";
  }
}

/** The host_name of a ClientHello body's server_name extension; throws (RangeError) on a body cut short. */
function serverName(hello: Buffer): string | undefined {
  let at = 2 + 32; // legacy_version, random
  at += 1 + hello.readUInt8(at); // legacy_session_id
  at += 2 + hello.readUInt16BE(at); // cipher_suites
  at += 1 + hello.readUInt8(at); // legacy_compression_methods
  if (at === hello.length) return undefined; // no extensions
  const end = at + 2 + hello.readUInt16BE(at);
  if (end > hello.length) throw new RangeError("extensions past the hello");
  at += 2;
  while (at + 4 <= end) {
    const type = hello.readUInt16BE(at);
    const length = hello.readUInt16BE(at + 2);
    at += 4;
    if (at + length > end) throw new RangeError("extension past the hello");
    if (type === SERVER_NAME_EXTENSION) {
      const listEnd = at + 2 + hello.readUInt16BE(at);
      let p = at + 2;
      while (p + 3 <= listEnd) {
        const nameType = hello.readUInt8(p);
        const nameLength = hello.readUInt16BE(p + 1);
        if (p + 3 + nameLength > listEnd) throw new RangeError("name past the list");
        if (nameType === HOST_NAME) return hello.toString("latin1", p + 3, p + 3 + nameLength).toLowerCase();
        p += 3 + nameLength;
      }
      return undefined;
    }
    at += length;
  }
  return undefined;
}
