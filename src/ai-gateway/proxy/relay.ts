import type { IncomingHttpHeaders, OutgoingHttpHeaders } from "node:http";
import type { LogQueue } from "../logs/queue.js";
import type { LogDraft } from "../logs/store.js";
import type { Exchange } from "./exchange.js";
import { BodyCapture, LOG_BODY_CAP } from "./request-body.js";
import { MAX_ENTRY_BYTES, type ResponseCache } from "./response-cache.js";
import { HOP_RESPONSE, type AnswerSink, type UpstreamFlow } from "./upstream.js";
import { emptyUsage, SseUsageReader, usageOfJson, type Usage } from "../metering/usage.js";
import { modelOfRequest } from "../logs/draft.js";
import { gatewayRequestOf, type GatewayRequestCounter } from "../analytics.js";

interface RelayInfo {
  provider: string;
  path: string;
  requestType: string | null;
  step: number | null;
  /** The request body as sent (captured while it streamed, or the buffered body). */
  requestBody: () => Buffer | null;
  requestSize: () => number;
  /** Where to store a successful answer, with its lifetime; absent when caching does not apply. */
  cache?: { key: string; ttlMs: number };
  /** Headers added to the answer (gw-aig-step, gw-aig-cache-status). */
  extraHeaders: OutgoingHttpHeaders;
}

/** Where an answer goes once it is out: the log queue and the response cache. */
export interface LogSink {
  queue: LogQueue;
  cache: ResponseCache;
  /** Where each request is counted (aiGatewayRequestsAdaptiveGroups), with its tokens and cost. */
  requests: GatewayRequestCounter;
}

const contentType = (h: Record<string, unknown>) => (typeof h["content-type"] === "string" ? (h["content-type"] as string) : null);

/** Answer headers for the client: the provider's, minus hop-by-hop ones, plus the gateway's own. */
export function answerHeaders(ex: Exchange, upstream: Record<string, string | string[] | undefined>, extra: OutgoingHttpHeaders): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const k in upstream) {
    const v = upstream[k];
    if (v !== undefined && !HOP_RESPONSE.has(k)) out[k] = v;
  }
  if (ex.logId) out["gw-aig-log-id"] = ex.logId;
  for (const k in extra) out[k] = extra[k];
  // The gateway shares its origin with the dashboard (which keeps the user's API token in that origin's storage): a
  // provider's answer that is a page (an HTML error page of a proxy in front of it, a reply carrying <script>) must
  // not run there. Sandboxed, it runs in an origin of its own, if at all; API clients ignore both headers.
  out["content-security-policy"] = "default-src 'none'; sandbox";
  out["x-content-type-options"] = "nosniff";
  return out;
}

/**
 * Passes the provider's answer to the client as undici parses it: the head and each chunk are written at once,
 * in the turn they arrived. Everything else runs after the bytes are on their way: the cache entry right after
 * the last write, and the log's draft (logs/draft.ts) handed to the queue as it is: reading usage from the answer,
 * pricing and building the record happen where the batch is written, off this event loop when the store has a
 * writer thread.
 */
export class Relay implements AnswerSink {
  private status = 0;
  private ct: string | null = null;
  private isSse = false;
  private upstreamHeaders: IncomingHttpHeaders | null = null;
  private capture: BodyCapture | null = null;
  private sse: SseUsageReader | null = null;
  /** Stream chunks waiting to be read for usage once the loop is free (SSE answers that are logged only). */
  private sseBacklog: Buffer[] | null = null;
  private size = 0;
  private aborted = false;
  private flow: UpstreamFlow | null = null;

  /** With `declineFailures`, an answer of 400 or more is declined (the universal endpoint then tries its next step). */
  constructor(
    private readonly ex: Exchange,
    private readonly info: RelayInfo,
    private readonly sink: LogSink,
    private readonly declineFailures = false,
  ) {}

  head(status: number, headers: IncomingHttpHeaders, flow: UpstreamFlow): boolean {
    if (this.declineFailures && status >= 400) return false;
    const { ex, info } = this;
    this.status = status;
    this.flow = flow;
    this.upstreamHeaders = headers;
    this.ct = contentType(headers);
    const isSse = (this.isSse = !!this.ct?.includes("text/event-stream"));
    // Usage is only read for a log; the body is only kept for the cache, the log's payload, or a JSON answer's usage.
    const logging = ex.logId !== null;
    // Counted requests need their usage too (tokens and cost), logged or not.
    const metering = logging || this.sink.requests.listener !== undefined;
    if (metering && isSse) {
      this.sse = new SseUsageReader();
      this.sseBacklog = [];
    }
    if (info.cache || (metering && !isSse) || (logging && ex.opts.collectPayload)) this.capture = new BodyCapture(info.cache ? MAX_ENTRY_BYTES : LOG_BODY_CAP);
    ex.res.writeHead(status, answerHeaders(ex, headers, info.extraHeaders));
    return true;
  }

  data(chunk: Buffer): void {
    const res = this.ex.res;
    const flowing = res.write(chunk);
    this.size += chunk.length;
    this.capture?.add(chunk);
    if (this.sseBacklog && this.sseBacklog.push(chunk) === 1) setImmediate(() => this.readBacklog());
    if (!flowing && !res.destroyed) {
      this.flow!.pause();
      res.once("drain", () => this.flow!.resume());
    }
  }

  end(): void {
    this.ex.res.end();
    this.ex.ended = performance.now();
    if (this.info.cache && this.status >= 200 && this.status < 300) this.storeInCache();
    if (this.ex.logId !== null) this.queueDraft();
    this.count();
  }

  fail(): void {
    this.aborted = true;
    this.ex.res.destroy();
    this.ex.ended = performance.now();
    if (this.ex.logId !== null) this.queueDraft();
    this.count();
  }

  /** Counts the request for the analytics dataset: usage read from the stream, or from the whole JSON answer here. */
  private count(): void {
    const listener = this.sink.requests.listener;
    if (!listener) return;
    const { ex, info } = this;
    if (this.sse) this.readBacklog();
    const body = this.sse ? null : this.capture?.buffer();
    const usage = this.sse ? this.sse.end() : body ? usageOfJson(body) : emptyUsage();
    const errored = this.aborted || this.status >= 400;
    listener(
      gatewayRequestOf(
        {
          accountId: ex.gateway.account_id,
          gateway: ex.gateway.id,
          provider: info.provider,
          requestModel: usage.model ? null : modelOfRequest(info.requestBody()),
        },
        usage,
        { cached: false, cacheLookup: info.cache !== undefined, errored },
        this.sink.requests.prices,
        ex.opts.customCost,
      ),
    );
  }

  private readBacklog(): void {
    for (const c of this.sseBacklog!) this.sse!.push(c);
    this.sseBacklog!.length = 0;
  }

  /** Right after the answer, so that the next identical request finds it. */
  private storeInCache(): void {
    const body = this.capture?.buffer();
    if (!body) return;
    const headers: Record<string, string | string[]> = {};
    const upstream = this.upstreamHeaders!;
    for (const k in upstream) {
      const v = upstream[k];
      if (v !== undefined && !HOP_RESPONSE.has(k) && k !== "content-length") headers[k] = v;
    }
    this.sink.cache.set(this.info.cache!.key, { status: this.status, headers, body, expires: Date.now() + this.info.cache!.ttlMs });
  }

  /** Hands the log's draft to the queue: the facts as they are, read and priced where the batch is written. */
  private queueDraft(): void {
    const { ex, info, status, aborted } = this;
    if (this.sse) this.readBacklog();
    queueLog(ex, this.sink.queue, {
      provider: info.provider,
      path: info.path,
      requestType: info.requestType,
      step: info.step,
      status: aborted && status < 400 ? 499 : status,
      success: !aborted && status >= 200 && status < 300,
      outcome: aborted ? "aborted" : "answered",
      usage: this.sse ? this.sse.end() : null,
      requestBody: info.requestBody(),
      requestSize: info.requestSize(),
      // A stream's body is not read again for usage: it was read as it passed.
      responseBody: this.capture?.buffer() ?? null,
      responseSize: this.size,
      responseType: this.ct,
    });
  }
}

interface LogFacts {
  provider: string;
  path: string;
  requestType: string | null;
  step: number | null;
  status: number;
  success: boolean;
  outcome: LogDraft["outcome"];
  usage: Usage | null;
  requestBody: Buffer | null;
  requestSize: number;
  responseBody: Buffer | null;
  responseSize: number;
  responseType: string | null;
}

/** Queues the draft of an exchange's log (its id was announced in gw-aig-log-id). */
export function queueLog(ex: Exchange, queue: LogQueue, f: LogFacts): void {
  const g = ex.gateway;
  const opts = ex.opts;
  queue.push({
    id: ex.logId!,
    account_id: g.account_id,
    gateway_id: g.id,
    arrived_at: ex.arrivedAt,
    provider: f.provider,
    path: f.path,
    request_type: f.requestType,
    step: f.step,
    status_code: f.status,
    success: f.success,
    outcome: f.outcome,
    duration: Math.round(ex.ended - ex.started),
    usage: f.usage,
    custom_cost: opts.customCost ?? null,
    metadata: opts.metadata,
    request_content_type: contentType(ex.req.headers),
    response_content_type: f.responseType,
    request_size: f.requestSize,
    response_size: f.responseSize,
    authenticated: ex.authenticated,
    event_id: opts.eventId,
    request_body: f.requestBody,
    response_body: f.responseBody,
    keep_bodies: opts.collectPayload,
    limit: g.log_management,
    strategy: g.log_management_strategy,
  });
}
