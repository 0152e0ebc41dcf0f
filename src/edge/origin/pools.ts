import { rootCertificates } from "node:tls";
import { Pool } from "undici";
import { keepRelayBuffersResident, relayConnectOptions } from "../../core/http/relay.js";
import type { SslMode } from "../settings/definitions.js";

/** How the edge reaches one origin: the address connected to, and what TLS it speaks there. */
export interface OriginTarget {
  address: string;
  /** The requested name: the TLS server name (SNI) and the Host header. */
  servername: string;
  mode: SslMode;
  /** Default: 80 for `off`/`flexible`, 443 for `full`/`strict` (a Worker's subrequest may name another). */
  port?: number;
}

/** Pools kept at once: past this many origins, the least recently used one is closed. */
const MAX_POOLS = 1024;
/** Connections to one origin address at once (more requests wait in its queue). */
const CONNECTIONS_PER_ORIGIN = 256;

/**
 * Keep-alive connection pools to origins (undici), one per address, TLS name and SSL mode: `off`/`flexible` speak
 * plain HTTP to port 80, `full` TLS to 443 without verifying, `strict` TLS to 443 verified against the system CAs
 * and --origin-ca-file.
 */
export class OriginPools {
  private readonly pools = new Map<string, Pool>();
  /** The key of the pool last in `pools` (the most recently used). */
  private lastKey: string | undefined;
  /** The target last asked for and its pool (the most recently used one, so never the one an eviction closes). */
  private lastTarget: (OriginTarget & { pool: Pool }) | undefined;
  private readonly strictCa?: string[];

  constructor(private readonly opts: { connectTimeoutMs: number; answerTimeoutMs: number; extraCa?: string }) {
    if (opts.extraCa) this.strictCa = [...rootCertificates, opts.extraCa];
    // Relayed bodies' buffers are reused rather than faulted in afresh every few MiB (relay.ts says why).
    keepRelayBuffersResident();
  }

  static url(t: OriginTarget): string {
    const host = t.address.includes(":") ? `[${t.address}]` : t.address;
    const tls = t.mode === "full" || t.mode === "strict";
    return `${tls ? "https" : "http"}://${host}:${t.port ?? (tls ? 443 : 80)}`;
  }

  pool(t: OriginTarget): Pool {
    // A run of requests to one origin asks for the same pool each time, with the same address, name and mode strings
    // (the forwarder's per-host memo hands them out): compared as they are, without building the key and looking it
    // up (measured 0.4-1 us a request, docs/benchmarks.md). Any difference takes the keyed way below.
    const last = this.lastTarget;
    if (last && last.address === t.address && last.port === t.port && last.mode === t.mode && last.servername === t.servername) return last.pool;
    const pool = this.keyed(t);
    this.lastTarget = { address: t.address, port: t.port, mode: t.mode, servername: t.servername, pool };
    return pool;
  }

  private keyed(t: OriginTarget): Pool {
    const tls = t.mode === "full" || t.mode === "strict";
    // The key names what the pool's connections are (address, port, TLS name and mode), without building the URL on
    // every request; `off` and `flexible` speak the same plain HTTP.
    const key = tls ? `${t.address}|${t.port ?? 443}|${t.servername}|${t.mode}` : `${t.address}|${t.port ?? 80}|http`;
    let pool = this.pools.get(key);
    if (pool) {
      // Most recently used last: the first in the map is the one closed when there are too many (already last: a
      // run of requests to one origin moves nothing).
      if (key !== this.lastKey) {
        this.pools.delete(key);
        this.pools.set(key, pool);
        this.lastKey = key;
      }
      return pool;
    }
    const url = OriginPools.url(t);
    this.lastKey = key;
    pool = new Pool(url, {
      connections: CONNECTIONS_PER_ORIGIN,
      pipelining: 1,
      keepAliveTimeout: 30_000,
      headersTimeout: this.opts.answerTimeoutMs,
      // Between two chunks of the answer's body: an origin that stops sending mid-body is cut after this long.
      bodyTimeout: this.opts.answerTimeoutMs,
      connect: {
        // A request body's chunks go on without a pause each (relay.ts says why).
        ...relayConnectOptions,
        timeout: this.opts.connectTimeoutMs,
        ...(tls
          ? {
              servername: t.servername,
              rejectUnauthorized: t.mode === "strict",
              ...(t.mode === "strict" && this.strictCa ? { ca: this.strictCa } : {}),
            }
          : {}),
      },
    });
    this.pools.set(key, pool);
    if (this.pools.size > MAX_POOLS) {
      const [oldestKey, oldest] = this.pools.entries().next().value as [string, Pool];
      this.pools.delete(oldestKey);
      if (oldestKey === this.lastKey) this.lastKey = undefined;
      void oldest.close().catch(() => undefined);
    }
    return pool;
  }

  /** TLS options for a raw connection (a WebSocket passed through), as the pools use. */
  tlsOptions(t: OriginTarget): { servername: string; rejectUnauthorized: boolean; ca?: string[] } {
    return { servername: t.servername, rejectUnauthorized: t.mode === "strict", ...(t.mode === "strict" && this.strictCa ? { ca: this.strictCa } : {}) };
  }

  async close(): Promise<void> {
    const all = [...this.pools.values()];
    this.pools.clear();
    this.lastKey = undefined;
    this.lastTarget = undefined;
    await Promise.all(all.map((p) => p.destroy().catch(() => undefined)));
  }
}
