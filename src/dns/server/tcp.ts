import net from "node:net";
import type { Logger } from "../../core/logger.js";
import type { TcpLimits } from "../config.js";
import { LogThrottle } from "../log-throttle.js";

/**
 * Answers one DNS message that arrived over TCP: zero or more messages to send back, as an array, or as an iterable
 * producing them one at a time (an AXFR of a large zone, which is produced and sent over many turns of the event loop).
 */
export type TcpResponder = (msg: Buffer, remote: string) => Buffer[] | Iterable<Buffer>;

/**
 * Messages of a streamed answer produced and written per turn of the event loop: an AXFR message of 200 records took
 * 1-2 ms to build on a loaded 2-vCPU machine (CPU profile of bench/dns/secondary-transfer.mjs), so a turn stays near
 * 10 ms and other clients are answered between turns.
 */
const STREAMED_PER_TURN = 8;
/**
 * And no more messages in a turn once it has taken this long: a signed zone's message carries about 100 fresh
 * signatures (dnssec/zone-transfer.ts), several milliseconds each message, so a turn of 8 of them held the loop for
 * 10 times as long. At least one message goes per turn.
 */
const STREAMED_TURN_MS = 10;

/** Refused connections are logged at most this often (with how many). */
const REFUSAL_LOG_INTERVAL_MS = 10_000;

/**
 * DNS over TCP (RFC 7766): two-byte length-prefixed messages, several per connection. Every connection is bounded
 * (TcpLimits, from `edgecli serve` options): how many are open at all and per client address (the rest are reset
 * as they arrive), how long one may stay silent, how long a message may take from its first byte to its last (a
 * client trickling a byte at a time is cut off), and how long a connection may live however busy it is. A client
 * that does not read its answers stops being read from until it does (and is then closed as idle), so its answers
 * cannot pile up in memory. A streamed answer (a zone transfer) is written a few messages per turn, waits for 'drain'
 * when the client reads slower than it is produced, stops being produced when the connection closes, and holds back
 * the connection's next question until it is done, so answers on one connection stay in order.
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
    // While a streamed answer is being sent, the stream decides when reading resumes.
    let streaming = false;
    socket.on("drain", () => {
      if (!streaming) socket.resume();
    });

    const stream = (messages: Iterator<Buffer>) => {
      streaming = true;
      socket.pause();
      const stop = () => messages.return?.();
      socket.once("close", stop);
      const turn = () => {
        if (socket.destroyed) return;
        let room = true;
        const began = performance.now();
        try {
          for (let n = 0; n < STREAMED_PER_TURN && room && (n === 0 || performance.now() - began < STREAMED_TURN_MS); n++) {
            const next = messages.next();
            if (next.done) {
              socket.off("close", stop);
              streaming = false;
              socket.resume();
              readQuestions();
              return;
            }
            room = socket.write(frame(next.value));
          }
        } catch (err) {
          this.log.warn({ err }, "dns tcp streamed answer failed");
          socket.destroy();
          return;
        }
        if (room) setImmediate(turn);
        else socket.once("drain", turn);
      };
      turn();
    };

    let buf: Buffer = Buffer.alloc(0);
    const readQuestions = () => {
      while (!streaming && buf.length >= 2) {
        const len = buf.readUInt16BE(0);
        if (buf.length < 2 + len) break;
        const msg = buf.subarray(2, 2 + len);
        buf = buf.subarray(2 + len);
        clearTimeout(messageDeadline);
        messageDeadline = undefined;
        let out: Buffer[] | Iterable<Buffer>;
        try {
          out = this.respond(msg, address);
        } catch (err) {
          this.log.warn({ err }, "dns tcp query failed");
          socket.destroy();
          return;
        }
        if (!Array.isArray(out)) {
          stream(out[Symbol.iterator]());
          return;
        }
        let room = true;
        for (const m of out) room = socket.write(frame(m)) && room;
        if (!room) socket.pause();
      }
      // The next message has begun: all of it must be here within the message timeout.
      if (!streaming && buf.length > 0 && !messageDeadline) messageDeadline = setTimeout(() => socket.destroy(), this.limits.messageTimeoutMs);
    };
    socket.on("data", (chunk: Buffer) => {
      buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
      readQuestions();
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
