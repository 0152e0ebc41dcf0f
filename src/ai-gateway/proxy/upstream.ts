import type { IncomingHttpHeaders } from "node:http";
import type { Readable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import { Pool, type Dispatcher } from "undici";
import { AigErrors } from "../errors.js";

/** Request headers that describe one hop only (or that undici manages itself); never forwarded. */
const HOP_REQUEST = new Set([
  "host",
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authorization",
  "transfer-encoding",
  "te",
  "upgrade",
  "trailer",
  "expect",
  "http2-settings",
]);
/** True for a request header that describes one hop only (or that undici manages, or refuses, itself). */
export const isHopHeader = (name: string) => HOP_REQUEST.has(name);
/** Response headers that describe the upstream hop. */
export const HOP_RESPONSE = new Set(["connection", "keep-alive", "transfer-encoding", "proxy-connection", "upgrade", "trailer"]);

export interface RetryPolicy {
  attempts: number;
  delayMs: number;
  backoff: "constant" | "linear" | "exponential";
  /** Time allowed until the response headers arrive (the hosted gateway's request timeout counts to first byte). */
  timeoutMs: number;
}

interface UpstreamRequest {
  url: URL;
  method: string;
  headers: Record<string, string | string[]>;
  /** A Buffer when the request may be sent more than once; a stream when it goes once, as it arrives. */
  body: Buffer | Readable | null;
  retry: RetryPolicy;
  /** Fires when the client went away: the call is dropped and no further attempts are made. */
  signal?: ClientGone;
}

export type UpstreamFlow = Dispatcher.DispatchController;

/**
 * Where the provider's answer goes as it arrives: straight from undici's parser callbacks, with no stream or
 * promise per chunk in between, so the first byte reaches the client in the same turn it came in.
 */
export interface AnswerSink {
  /** Status and headers of the answer (hop-by-hop ones included); false declines it (it is then read and dropped). */
  head(status: number, headers: IncomingHttpHeaders, flow: UpstreamFlow): boolean;
  data(chunk: Buffer): void;
  end(): void;
  /** The answer broke off after head() (the provider, the network, or the client going away). */
  fail(err: Error): void;
}

/**
 * Tells the upstream call (and its retries) that the client went away before its answer was complete:
 * the attempt in flight is aborted, and no further attempt is made. One listener per request.
 */
export class ClientGone {
  aborted = false;
  private flow: UpstreamFlow | null = null;

  /** The attempt now in flight (each retry replaces the previous one). */
  watch(flow: UpstreamFlow): void {
    this.flow = flow;
    if (this.aborted) flow.abort(new Error("the client went away"));
  }

  fire(): void {
    this.aborted = true;
    this.flow?.abort(new Error("the client went away"));
  }
}

export const DEFAULT_TIMEOUT_MS = 300_000;

/** Copies the client's headers for the provider, minus hop-by-hop and gateway headers; the credential is untouched. */
export function forwardHeaders(h: IncomingHttpHeaders, drop: (name: string) => boolean): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const k in h) {
    const v = h[k];
    if (v === undefined || HOP_REQUEST.has(k) || drop(k)) continue;
    out[k] = v;
  }
  // Usage is read from the answer as it passes, which needs it uncompressed.
  out["accept-encoding"] = "identity";
  return out;
}

const retryable = (status: number) => status === 429 || status >= 500;

/** How one attempt ended: its answer went to the sink, was declined by it, is to be retried, or never came. */
type Outcome = "taken" | "declined" | "retry" | Error;

/** Keep-alive connection pools, one per upstream origin, reused by every request. */
export class Upstreams {
  private readonly pools = new Map<string, Pool>();
  /**
   * The pool and request path of each target URL seen (the proxy keeps one URL object per target and reuses it):
   * URL's origin and pathname are getters that build a new string on every read.
   */
  private targets = new WeakMap<URL, { pool: Pool; path: string }>();

  private pool(origin: string): Pool {
    let p = this.pools.get(origin);
    if (!p) {
      p = new Pool(origin, { connections: 256, keepAliveTimeout: 30_000, keepAliveMaxTimeout: 600_000, connectTimeout: 10_000 });
      this.pools.set(origin, p);
    }
    return p;
  }

  /**
   * Sends the request and hands the answer to `sink`, retrying network failures, timeouts, 429 and 5xx answers
   * per the policy (the last attempt's answer goes to the sink whatever its status). Resolves once the answer has
   * ended or broken off: true when the sink took it, false when it declined it. Failing to get an answer at all
   * is an EdgeError (502/504).
   */
  async send(r: UpstreamRequest, sink: AnswerSink): Promise<boolean> {
    const { attempts, delayMs, backoff } = r.retry;
    for (let i = 0; ; i++) {
      const last = i >= attempts - 1;
      const outcome = await this.attempt(r, sink, last);
      if (outcome === "taken") return true;
      if (outcome === "declined") return false;
      if (outcome !== "retry" && (last || r.signal?.aborted)) throw upstreamError(outcome, r.url);
      const wait = backoff === "exponential" ? delayMs * 2 ** i : backoff === "linear" ? delayMs * (i + 1) : delayMs;
      if (wait > 0) await sleep(wait);
      if (r.signal?.aborted) throw AigErrors.clientGone();
    }
  }

  private attempt(r: UpstreamRequest, sink: AnswerSink, last: boolean): Promise<Outcome> {
    let target = this.targets.get(r.url);
    if (!target) {
      target = { pool: this.pool(r.url.origin), path: r.url.pathname + r.url.search };
      this.targets.set(r.url, target);
    }
    const { pool, path } = target;
    return new Promise((resolve) => {
      const opts: Dispatcher.DispatchOptions = {
        path,
        method: r.method as Dispatcher.HttpMethod,
        headers: r.headers,
        body: r.body,
        headersTimeout: r.retry.timeoutMs,
        bodyTimeout: DEFAULT_TIMEOUT_MS,
      };
      pool.dispatch(opts, new Attempt(sink, last, r.signal, resolve));
    });
  }

  async close(): Promise<void> {
    await Promise.all([...this.pools.values()].map((p) => p.destroy()));
    this.pools.clear();
    this.targets = new WeakMap();
  }
}

/** undici's callbacks for one attempt, as methods of one object rather than a closure each per request. */
class Attempt implements Dispatcher.DispatchHandler {
  private outcome: Outcome | undefined;

  constructor(
    private readonly sink: AnswerSink,
    private readonly last: boolean,
    private readonly signal: ClientGone | undefined,
    private readonly resolve: (o: Outcome) => void,
  ) {}

  onRequestStart(flow: UpstreamFlow): void {
    this.signal?.watch(flow);
  }

  onResponseStart(flow: UpstreamFlow, status: number, headers: IncomingHttpHeaders): void {
    if (status < 200) return; // informational; the answer follows
    this.outcome = !this.last && retryable(status) ? "retry" : this.sink.head(status, headers, flow) ? "taken" : "declined";
  }

  onResponseData(_flow: UpstreamFlow, chunk: Buffer): void {
    if (this.outcome === "taken") this.sink.data(chunk);
  }

  onResponseEnd(): void {
    if (this.outcome === "taken") this.sink.end();
    // An answer with no final status (only 1xx) is a broken one: an error, so the last attempt does not repeat.
    this.resolve(this.outcome ?? new Error("the provider ended its answer without a final status"));
  }

  onResponseError(_flow: UpstreamFlow, err: Error): void {
    if (this.outcome === "taken") {
      this.sink.fail(err);
      this.resolve("taken");
    } else this.resolve(err);
  }
}

function upstreamError(err: unknown, url: URL) {
  const code = (err as { code?: string }).code ?? "";
  if (code === "UND_ERR_HEADERS_TIMEOUT") return AigErrors.upstreamTimeout(url.origin);
  return AigErrors.upstreamUnreachable(url.origin, code || (err as Error).message);
}
