import dgram from "node:dgram";
import { lookup } from "node:dns";
import { isIP } from "node:net";

const CACHE_LIMIT = 50_000;

/**
 * Answers as wire bytes keyed by the query minus its id (flags, counts, question and EDNS: everything
 * an answer depends on), so a repeated question costs one Map lookup and a copy with the id patched in.
 * Shared by the main process and the UDP answering processes; cleared on any change to any zone.
 */
export class WireCache {
  private readonly map = new Map<string, Buffer>();

  /** The cache key of a query of at least 12 bytes. */
  static key(msg: Buffer): string {
    return msg.toString("latin1", 2);
  }

  /** A fresh copy of the cached answer with the query's id, or undefined. */
  answer(key: string, query: Buffer): Buffer | undefined {
    const hit = this.map.get(key);
    if (!hit) return undefined;
    // A copy, not the cached buffer: a send that has to wait in libuv's queue still holds its bytes.
    const out = Buffer.allocUnsafe(hit.length);
    hit.copy(out);
    out[0] = query[0];
    out[1] = query[1];
    return out;
  }

  set(key: string, answer: Buffer): void {
    if (this.map.size >= CACHE_LIMIT) this.map.clear();
    this.map.set(key, answer);
  }

  clear(): void {
    this.map.clear();
  }
}

/**
 * Receive buffer asked for the DNS UDP socket. Linux's default (net.core.rmem_default, usually 208 KiB) holds only
 * a few hundred datagrams: a few milliseconds of a flood, less than a busy machine may keep the answering thread
 * off the CPU, and every datagram past it (real questions too) is dropped. The kernel grants at most
 * net.core.rmem_max (serverStarted logs what it granted).
 */
const UDP_RECEIVE_BUFFER = 8 << 20;

/**
 * A UDP socket for the DNS server. dgram passes the destination of every send through its lookup
 * function, which by default still costs an address check and a deferred callback per packet; once the
 * socket is bound it only ever replies to the address a query came from, always a literal, so from then
 * on the lookup answers at once. Before that it resolves normally (a --dns-host given as a name).
 */
export function createUdpSocket(host: string): dgram.Socket {
  let bound = false;
  const resolve = (name: string, family: number, cb: (err: NodeJS.ErrnoException | null, address: string, family: number) => void) => {
    if (bound) cb(null, name, family);
    else lookup(name, family, cb);
  };
  const socket = dgram.createSocket({
    type: isIP(host) === 6 ? "udp6" : "udp4",
    reuseAddr: false,
    lookup: resolve as never,
    recvBufferSize: UDP_RECEIVE_BUFFER,
  });
  socket.once("listening", () => (bound = true));
  return socket;
}
