import net from "node:net";
import type { Logger } from "../../core/logger.js";
import type { TcpLimits } from "../config.js";
import { LogThrottle } from "./log-throttle.js";

/** Answers one DNS message that arrived over TCP: zero or more messages to send back (AXFR sends many). */
type TcpResponder = (msg: Buffer, remote: string) => Buffer[];

/** Refused connections are logged at most this often (with how many). */
const REFUSAL_LOG_INTERVAL_MS = 10_000;

/**
 * DNS over TCP (RFC 7766): two-byte length-prefixed messages, several per connection. Every connection is bounded
 * (TcpLimits, from `edgecli serve` options): how many are open at all and per client address (the rest are reset
 * as they arrive), how long one may stay silent, how long a message may take from its first byte to its last (a
 * client trickling a byte at a time is cut off), and how long a connection may live however busy it is. A client
 * that does not read its answers stops being read from until it does (and is then closed as idle), so its answers
 * cannot pile up in memory.
 */
export class DnsTcpListener {
  private readonly server = net.createServer((socket) => this.accept(socket));
  private readonly sockets = new Set<net.Socket>();
  private readonly perAddress = new Map<string, number>();
  private readonly refusals = new LogThrottle(REFUSAL_LOG_INTERVAL_MS);

  constructor(
    private readonly limits: TcpLimits,
    private readonly respond: TcpResponder,
    private readonly log: Logger,
  ) {}

  /** Listens and returns the port (port 0 picks one). */
  async listen(port: number, host: string): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      this.server.once("error", reject);
      this.server.listen(port, host, () => {
        this.server.off("error", reject);
        resolve();
      });
    });
    return (this.server.address() as net.AddressInfo).port;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    if (this.server.listening) await new Promise((resolve) => this.server.close(resolve));
  }

  private accept(socket: net.Socket): void {
    const address = (socket.remoteAddress ?? "").replace(/^::ffff:/, "");
    const fromAddress = this.perAddress.get(address) ?? 0;
    if (this.sockets.size >= this.limits.maxClients || fromAddress >= this.limits.maxClientsPerAddress) {
      this.refused(address, fromAddress);
      socket.on("error", () => {});
      socket.resetAndDestroy();
      return;
    }
    this.sockets.add(socket);
    this.perAddress.set(address, fromAddress + 1);
    const lifetime = setTimeout(() => socket.destroy(), this.limits.maxLifetimeMs);
    let messageDeadline: NodeJS.Timeout | undefined;
    socket.setTimeout(this.limits.idleTimeoutMs, () => socket.destroy());
    socket.on("error", () => socket.destroy());
    socket.on("close", () => {
      clearTimeout(lifetime);
      clearTimeout(messageDeadline);
      this.sockets.delete(socket);
      const left = (this.perAddress.get(address) ?? 1) - 1;
      if (left > 0) this.perAddress.set(address, left);
      else this.perAddress.delete(address);
    });
    // Answers the client has not read yet wait in the socket; past its high-water mark stop reading its questions.
    socket.on("drain", () => socket.resume());

    let buf: Buffer = Buffer.alloc(0);
    socket.on("data", (chunk: Buffer) => {
      buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
      while (buf.length >= 2) {
        const len = buf.readUInt16BE(0);
        if (buf.length < 2 + len) break;
        const msg = buf.subarray(2, 2 + len);
        buf = buf.subarray(2 + len);
        clearTimeout(messageDeadline);
        messageDeadline = undefined;
        let out: Buffer[];
        try {
          out = this.respond(msg, address);
        } catch (err) {
          this.log.warn({ err }, "dns tcp query failed");
          socket.destroy();
          return;
        }
        let room = true;
        for (const m of out) room = socket.write(frame(m)) && room;
        if (!room) socket.pause();
      }
      // The next message has begun: all of it must be here within the message timeout.
      if (buf.length > 0 && !messageDeadline) messageDeadline = setTimeout(() => socket.destroy(), this.limits.messageTimeoutMs);
    });
  }

  private refused(address: string, fromAddress: number): void {
    this.refusals.hit((refused) =>
      this.log.warn(
        { remote: address, open: this.sockets.size, open_from_remote: fromAddress, refused, limits: this.limits },
        "dns tcp connection limit reached; connections reset",
      ),
    );
  }
}

function frame(b: Buffer): Buffer {
  const out = Buffer.alloc(b.length + 2);
  out.writeUInt16BE(b.length, 0);
  b.copy(out, 2);
  return out;
}
