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
 * dgram resolves the destination of every send through dns.lookup, which for an address literal still
 * costs a validation and a deferred callback per packet; replies always go to the literal the query
 * came from, so answer at once and resolve only real host names (a --dns-host given as a name).
 */
function literalLookup(host: string, family: number, cb: (err: NodeJS.ErrnoException | null, address: string, family: number) => void): void {
  if (isIP(host)) cb(null, host, family);
  else lookup(host, family, cb);
}

export function createUdpSocket(host: string): dgram.Socket {
  return dgram.createSocket({ type: isIP(host) === 6 ? "udp6" : "udp4", reuseAddr: false, lookup: literalLookup as never });
}
