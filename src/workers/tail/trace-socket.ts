import { createHash } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";

/**
 * The server side of a tail session's WebSocket (RFC 6455), which only sends: text frames out, pings answered,
 * a close echoed. Written here rather than with the `ws` package because `wrangler tail` sends its first message
 * unmasked (`mask: false`), which RFC 6455 forbids and `ws` answers by closing the connection; the hosted service
 * accepts it, so this server does too. What a client sends is otherwise ignored, and a frame over 4 KiB closes it.
 */
export class TraceSocket {
  private buffered: Buffer = Buffer.alloc(0);
  private closed = false;
  private waitingDrain = false;
  private closeHandlers: (() => void)[] = [];

  private constructor(private readonly socket: Duplex) {
    socket.on("data", (chunk: Buffer) => this.read(chunk));
    socket.on("error", () => socket.destroy());
    socket.once("close", () => {
      this.closed = true;
      for (const h of this.closeHandlers.splice(0)) h();
    });
  }

  /** The handshake's key is well formed (16 bytes in base64) and the version is 13. */
  static acceptable(req: IncomingMessage): boolean {
    const key = req.headers["sec-websocket-key"];
    return typeof key === "string" && Buffer.from(key, "base64").length === 16 && req.headers["sec-websocket-version"] === "13";
  }

  /** Answers the handshake (101 with `protocol`) and returns the open socket; `head` is what followed the request. */
  static accept(req: IncomingMessage, socket: Duplex, head: Buffer, protocol: string): TraceSocket {
    const accept = createHash("sha1").update(`${req.headers["sec-websocket-key"]}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest("base64");
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\nSec-WebSocket-Protocol: ${protocol}\r\n\r\n`,
    );
    const ts = new TraceSocket(socket);
    if (head.length) ts.read(head);
    return ts;
  }

  get open(): boolean {
    return !this.closed && this.socket.writable;
  }

  /** Bytes written but not yet sent to the client. */
  get bufferedAmount(): number {
    return this.socket.writableLength;
  }

  onClose(handler: () => void): void {
    if (this.closed) handler();
    else this.closeHandlers.push(handler);
  }

  send(text: string): void {
    if (this.open) this.socket.write(frame(0x1, Buffer.from(text, "utf8")));
  }

  /** Sends a close frame and ends the connection (cut if the client does not close its side soon). */
  close(code: number, reason: string): void {
    if (!this.open) return;
    const payload = Buffer.alloc(2 + Buffer.byteLength(reason));
    payload.writeUInt16BE(code, 0);
    payload.write(reason, 2);
    this.socket.end(frame(0x8, payload));
    setTimeout(() => this.socket.destroy(), 2_000).unref();
  }

  private read(chunk: Buffer): void {
    this.buffered = this.buffered.length ? Buffer.concat([this.buffered, chunk]) : chunk;
    for (;;) {
      const b = this.buffered;
      if (b.length < 2) return;
      const opcode = b[0]! & 0x0f;
      const masked = (b[1]! & 0x80) !== 0;
      let length = b[1]! & 0x7f;
      let offset = 2;
      if (length === 126) {
        if (b.length < 4) return;
        length = b.readUInt16BE(2);
        offset = 4;
      } else if (length === 127) {
        return this.close(1009, "message too big");
      }
      if (length > MAX_CLIENT_FRAME) return this.close(1009, "message too big");
      const start = offset + (masked ? 4 : 0);
      if (b.length < start + length) return;
      const payload = Buffer.from(b.subarray(start, start + length));
      if (masked) for (let i = 0; i < payload.length; i++) payload[i]! ^= b[offset + (i % 4)]!;
      this.buffered = b.subarray(start + length);
      if (opcode === 0x8) {
        const code = payload.length >= 2 ? payload.readUInt16BE(0) : 1000;
        return this.close(code >= 1000 && code < 5000 && code !== 1005 && code !== 1006 && code !== 1015 ? code : 1000, "");
      }
      if (opcode === 0x9 && this.open && !this.socket.write(frame(0xa, payload))) this.readAfterDrain();
    }
  }

  /**
   * Stops reading the client until what was written to it has drained: a client that pings and never reads would
   * otherwise have every pong kept in memory here (32 MB of pings held 28 MB).
   */
  private readAfterDrain(): void {
    if (this.waitingDrain) return;
    this.waitingDrain = true;
    this.socket.pause();
    this.socket.once("drain", () => {
      this.waitingDrain = false;
      this.socket.resume();
    });
  }
}

/** The largest frame a client may send (its messages are ignored; pings carry a few bytes). */
const MAX_CLIENT_FRAME = 4096;

/** One unmasked, final frame (servers never mask). */
function frame(opcode: number, payload: Buffer): Buffer {
  const n = payload.length;
  const head = n < 126 ? Buffer.from([0x80 | opcode, n]) : n < 65536 ? Buffer.alloc(4) : Buffer.alloc(10);
  if (n >= 126 && n < 65536) {
    head[0] = 0x80 | opcode;
    head[1] = 126;
    head.writeUInt16BE(n, 2);
  } else if (n >= 65536) {
    head[0] = 0x80 | opcode;
    head[1] = 127;
    head.writeBigUInt64BE(BigInt(n), 2);
  }
  return Buffer.concat([head, payload]);
}
