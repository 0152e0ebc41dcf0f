import { once } from "node:events";
import type { OutgoingHttpHeaders } from "node:http";
import { costOf } from "./cost.js";
import { modelOfRequest, type Exchange } from "./exchange.js";
import { BodyCapture, LOG_BODY_CAP } from "./request-body.js";
import type { LogQueue } from "./log-queue.js";
import { MAX_ENTRY_BYTES, type ResponseCache } from "./response-cache.js";
import { HOP_RESPONSE, type UpstreamResponse } from "./upstream.js";
import { emptyUsage, SseUsageReader, usageOfJson, type Usage } from "./usage.js";

export interface RelayInfo {
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

export interface LogSink {
  queue: LogQueue;
  cache: ResponseCache;
}

const contentType = (h: Record<string, unknown>) => (typeof h["content-type"] === "string" ? (h["content-type"] as string) : null);

/** Answer headers for the client: the provider's, minus hop-by-hop ones, plus the gateway's own. */
export function answerHeaders(ex: Exchange, upstream: Record<string, string | string[] | undefined>, extra: OutgoingHttpHeaders): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(upstream)) if (v !== undefined && !HOP_RESPONSE.has(k)) out[k] = v;
  if (ex.logId) out["gw-aig-log-id"] = ex.logId;
  return Object.assign(out, extra);
}

/**
 * Streams the provider's answer to the client chunk by chunk, reading usage as it passes (SSE events, or
 * the JSON body at its end), then queues the log and fills the cache. Nothing here waits for storage.
 */
export async function relay(ex: Exchange, up: UpstreamResponse, info: RelayInfo, sink: LogSink): Promise<void> {
  const { res } = ex;
  const ct = contentType(up.headers);
  const isSse = !!ct?.includes("text/event-stream");
  // Usage is only read for a log; the body is only kept for the cache, the log's payload, or a JSON answer's usage.
  const logging = ex.logId !== null;
  const sse = logging && isSse ? new SseUsageReader() : null;
  const keepBody = !!info.cache || (logging && (!isSse || ex.opts.collectPayload));
  const capture = keepBody ? new BodyCapture(info.cache ? MAX_ENTRY_BYTES : LOG_BODY_CAP) : null;
  let size = 0;
  let aborted = false;

  res.writeHead(up.statusCode, answerHeaders(ex, up.headers, info.extraHeaders));
  const onClose = () => {
    if (!res.writableFinished) {
      aborted = true;
      up.body.destroy();
    }
  };
  res.once("close", onClose);
  try {
    for await (const chunk of up.body as AsyncIterable<Buffer>) {
      // The client gets the bytes first; reading usage and keeping a copy happen after.
      const flowing = res.write(chunk);
      size += chunk.length;
      capture?.add(chunk);
      sse?.push(chunk);
      if (!flowing) await Promise.race([once(res, "drain"), once(res, "close")]);
    }
    res.end();
  } catch {
    aborted = true;
    res.destroy();
  } finally {
    res.off("close", onClose);
  }

  const body = capture?.buffer() ?? null;
  const success = !aborted && up.statusCode >= 200 && up.statusCode < 300;
  if (success && info.cache && body) {
    const headers: Record<string, string | string[]> = {};
    for (const [k, v] of Object.entries(up.headers)) if (v !== undefined && !HOP_RESPONSE.has(k) && k !== "content-length") headers[k] = v;
    sink.cache.set(info.cache.key, { status: up.statusCode, headers, body, expires: Date.now() + info.cache.ttlMs });
  }
  if (!logging) return;
  const usage: Usage = sse ? sse.end() : body && !isSse ? usageOfJson(body) : emptyUsage();
  const reqBody = info.requestBody();
  usage.model ??= modelOfRequest(reqBody);
  const cost = costOf(usage, ex.opts.customCost);
  queueLog(ex, sink.queue, {
    provider: info.provider,
    path: info.path,
    requestType: info.requestType,
    step: info.step,
    status: aborted && up.statusCode < 400 ? 499 : up.statusCode,
    success,
    cached: false,
    usage,
    cost: cost.cost,
    costNote: aborted ? "the client went away before the answer ended" : cost.note,
    customCost: cost.custom,
    requestBody: reqBody,
    requestSize: info.requestSize(),
    responseBody: body,
    responseSize: size,
    responseType: ct,
  });
}

export interface LogFacts {
  provider: string;
  path: string;
  requestType: string | null;
  step: number | null;
  status: number;
  success: boolean;
  cached: boolean;
  usage: Usage;
  cost: number | null;
  costNote: string | null;
  customCost: boolean;
  requestBody: Buffer | null;
  requestSize: number;
  responseBody: Buffer | null;
  responseSize: number;
  responseType: string | null;
}

/** Queues the log of an exchange (its id was announced in gw-aig-log-id). */
export function queueLog(ex: Exchange, queue: LogQueue, f: LogFacts): void {
  const g = ex.gateway;
  const payload = ex.opts.collectPayload;
  queue.push({
    id: ex.logId!,
    account_id: g.account_id,
    gateway_id: g.id,
    created_at: ex.createdAt,
    provider: f.provider,
    model: f.usage.model,
    path: f.path,
    request_type: f.requestType,
    status_code: f.status,
    success: f.success,
    cached: f.cached,
    step: f.step,
    duration: Math.round(performance.now() - ex.started),
    tokens_in: f.usage.tokensIn,
    tokens_out: f.usage.tokensOut,
    cached_tokens: f.usage.cachedTokens,
    reasoning_tokens: f.usage.reasoningTokens,
    cost: f.cost,
    cost_note: f.costNote,
    custom_cost: f.customCost,
    metadata: ex.opts.metadata,
    request_content_type: contentType(ex.req.headers),
    response_content_type: f.responseType,
    request_size: f.requestSize,
    response_size: f.responseSize,
    authenticated: ex.authenticated,
    event_id: ex.opts.eventId,
    request_body: payload ? f.requestBody : null,
    response_body: payload ? f.responseBody : null,
    limit: g.log_management,
    strategy: g.log_management_strategy,
  });
}
