import type { Server } from "node:http";
import { BlockList, isIPv4, type Socket } from "node:net";
import type { Duplex } from "node:stream";
import { CoreErrors, type EdgeError } from "../errors.js";

export interface ConnectionLimitSettings {
  /** Connections the edge port carries at once, from everyone (WebSockets included). */
  max: number;
  /** Connections one client carries at once: an IPv4 address, or an IPv6 /64 (what one subscriber is given). */
  perClientMax: number;
  /** Peers the per-client limit does not apply to (a reverse proxy carries many clients on its address). */
  perClientExempt: BlockList;
}

/**
 * How long a refused connection has to send the request its refusal answers. A client that opens connections
 * past its share is not owed a long wait, and every such connection holds a socket until then.
 */
const REFUSAL_WAIT_MS = 2_000;
/**
 * Refused connections waiting to be answered at once; past this, more are closed without an answer (as Node's
 * own maxConnections does), so that a flood of refused connections costs a bounded number of sockets.
 */
const REFUSALS_MAX = 512;

/**
 * Limits on the connections of the edge port, counted from accept to close (a WebSocket's connection counts for
 * as long as it is open); the HTTPS port's connections are counted here too, from their accept (`admitAtAccept`). The peer address is the TCP peer's: no header (X-Forwarded-For) is trusted for this, as
 * none has arrived when the connection is counted, and any client can write one.
 *
 * A connection past a limit is still read up to its first request head, which is answered 429 (the client's share)
 * or 503 (the node's) as a v4 envelope with `Connection: close`, after which the connection closes. Answering the
 * request rather than writing on accept keeps HTTP's order (an answer follows its request), so every client reads
 * it as the answer to what it sent. Such a connection is closed unanswered when its request does not come within
 * REFUSAL_WAIT_MS, or when REFUSALS_MAX refusals are already waiting.
 */
export class ConnectionLimits {
  private open = 0;
  /** Of `open`, the HTTPS port's (counted from accept); the rest are the edge port's. */
  private openTls = 0;
  private readonly perClient = new Map<string, number>();
  private readonly refusals = new WeakMap<Socket, EdgeError>();
  private refusing = 0;
  /** Connections counted where they were accepted (the HTTPS port), handed to the HTTP server once decrypted. */
  private readonly countedAtAccept = new WeakSet<Duplex>();

  constructor(private readonly settings: ConnectionLimitSettings) {}

  /**
   * Puts the limits in front of Node's HTTP connection handling: Node's own `connection` listener (the one that
   * attaches the HTTP parser) only sees a connection once it has been counted or marked for refusal.
   */
  install(server: Server): void {
    const nodeListeners = server.listeners("connection") as ((socket: Socket) => void)[];
    if (nodeListeners.length !== 1) throw new Error(`expected Node's one connection listener on a new HTTP server, found ${nodeListeners.length}`);
    const [serveConnection] = nodeListeners;
    server.removeListener("connection", serveConnection);
    server.on("connection", (socket: Socket) => {
      if (this.admit(socket)) serveConnection.call(server, socket);
    });
    // Past every connection and every waiting refusal, Node drops a connection at accept, before any JavaScript
    // object exists for it: the client sees the connection closed.
    server.maxConnections = this.maxAccepted;
  }

  /** Connections open now (refused ones waiting for their answer not included), by port: what the metrics show. */
  get openConnections(): { plain: number; tls: number } {
    return { plain: this.open - this.openTls, tls: this.openTls };
  }

  /** The refusal the request of `socket` gets, if its connection was over a limit. */
  refusalFor(socket: Socket | null): EdgeError | undefined {
    return socket ? this.refusals.get(socket) : undefined;
  }

  /**
   * Counts a connection another listener accepted, under the same limits: the HTTPS port's, from accept, before its
   * handshake (a connection that never finishes one holds a descriptor all the same). Over a limit it is closed at
   * once, as nothing can be answered before TLS is up; false then. Hand it over with `handOver` once decrypted. An edge
   * thread counts its plain connections this way too (`tls` false), from accept to their first head's end.
   */
  admitAtAccept(socket: Socket, tls = true): boolean {
    const { client, exempt, refusal } = this.check(socket);
    if (refusal) {
      socket.destroy();
      return false;
    }
    this.count(socket, client, exempt, tls);
    return true;
  }

  /** The most connections a listener in front of these limits should accept at all (its `maxConnections`). */
  get maxAccepted(): number {
    return this.settings.max + REFUSALS_MAX;
  }

  /** Marks a connection counted by `admitAtAccept` (its TLS socket) as it reaches the HTTP server: not counted twice. */
  handOver(socket: Duplex): void {
    this.countedAtAccept.add(socket);
  }

  /** Counts `socket` or marks it for refusal; false when it was closed here. */
  private admit(socket: Socket): boolean {
    if (this.countedAtAccept.has(socket)) return true;
    const { client, exempt, refusal } = this.check(socket);
    if (refusal) return this.refuseLater(socket, refusal);
    this.count(socket, client, exempt, false);
    return true;
  }

  private check(socket: Socket): { client: string | undefined; exempt: boolean; refusal: EdgeError | undefined } {
    const client = clientKey(socket.remoteAddress ?? "", socket.remoteFamily);
    const exempt = client === undefined || this.isExempt(socket);
    const fromClient = exempt ? 0 : (this.perClient.get(client) ?? 0);
    const refusal =
      this.open >= this.settings.max
        ? CoreErrors.tooManyConnections()
        : !exempt && fromClient >= this.settings.perClientMax
          ? CoreErrors.tooManyConnectionsFromClient(this.settings.perClientMax)
          : undefined;
    return { client, exempt, refusal };
  }

  private count(socket: Socket, client: string | undefined, exempt: boolean, tls: boolean): void {
    this.open++;
    if (tls) this.openTls++;
    const closed = () => {
      this.open--;
      if (tls) this.openTls--;
    };
    if (exempt || client === undefined) return void socket.once("close", closed);
    this.perClient.set(client, (this.perClient.get(client) ?? 0) + 1);
    socket.once("close", () => {
      closed();
      const left = (this.perClient.get(client) ?? 1) - 1;
      if (left > 0) this.perClient.set(client, left);
      else this.perClient.delete(client);
    });
  }

  private refuseLater(socket: Socket, refusal: EdgeError): boolean {
    if (this.refusing >= REFUSALS_MAX) {
      socket.destroy();
      return false;
    }
    this.refusing++;
    this.refusals.set(socket, refusal);
    const timer = setTimeout(() => socket.destroy(), REFUSAL_WAIT_MS);
    timer.unref();
    socket.once("close", () => {
      clearTimeout(timer);
      this.refusing--;
    });
    return true;
  }

  private isExempt(socket: Socket): boolean {
    const address = socket.remoteAddress;
    if (!address) return false;
    const plain = address.startsWith("::ffff:") && isIPv4(address.slice(7)) ? address.slice(7) : address;
    return this.settings.perClientExempt.check(plain, isIPv4(plain) ? "ipv4" : "ipv6");
  }
}

/**
 * The key a client's connections are counted under: the IPv4 address (IPv4-mapped IPv6 too), or the first 64 bits
 * of an IPv6 address. One subscriber gets a whole /64 and may use any address in it, so counting by full IPv6
 * address would give one client 2^64 shares. Undefined when the socket has no peer address (it is already closed).
 */
export function clientKey(address: string, family: string | undefined): string | undefined {
  if (!address) return undefined;
  if (address.startsWith("::ffff:") && isIPv4(address.slice(7))) return address.slice(7);
  if (family === "IPv4" || isIPv4(address)) return address;
  const bare = address.split("%")[0].toLowerCase();
  const [head, tail] = bare.split("::");
  const front = head ? head.split(":") : [];
  const back = tail === undefined ? [] : tail ? tail.split(":") : [];
  const groups = tail === undefined ? front : [...front, ...Array<string>(8 - front.length - back.length).fill("0"), ...back];
  return `${groups
    .slice(0, 4)
    .map((g) => g.padStart(4, "0"))
    .join(":")}::/64`;
}
