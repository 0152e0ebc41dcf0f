import { EventEmitter } from "node:events";
import type { IncomingMessage, ServerResponse } from "node:http";
import { ApiError } from "../core/errors.js";
import { defaultRetry, type RetryPolicy } from "./upstream.js";
import type { Gateway } from "./gateway-schema.js";
import type { RequestOptions } from "./request-options.js";

/** One client request on its way through the gateway, after authentication and header parsing. */
export interface Exchange {
  req: IncomingMessage;
  res: ServerResponse;
  /** performance.now() when the request arrived, for the log's duration. */
  started: number;
  createdAt: string;
  gateway: Gateway;
  authenticated: boolean;
  opts: RequestOptions;
  /** Id of the log this request will write, or null when it is not logged. */
  logId: string | null;
}

/** Collects up to `cap` bytes of a body for the log; beyond that the body is not stored (the hosted limit is 10 MB). */
export class BodyCapture {
  private chunks: Buffer[] = [];
  size = 0;
  constructor(private readonly cap: number) {}

  add(chunk: Buffer): void {
    this.size += chunk.length;
    if (this.size <= this.cap) this.chunks.push(chunk);
    else this.chunks = [];
  }

  /** The whole body, or null when it was larger than the cap. */
  buffer(): Buffer | null {
    if (this.size > this.cap) return null;
    return this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks);
  }
}

export const LOG_BODY_CAP = 10 * 1024 * 1024;

/** The `model` of a JSON request body, when it has one (for logs when the answer names none). */
export function modelOfRequest(body: Buffer | null): string | null {
  if (!body || body.length > 1 << 20) return null;
  try {
    const m = (JSON.parse(body.toString("utf8")) as { model?: unknown }).model;
    return typeof m === "string" ? m : null;
  } catch {
    return null;
  }
}

/** Reads a whole request body (for caching, retries and the universal endpoint), refusing more than `limit` bytes. */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        req.removeAllListeners("data");
        req.resume();
        reject(new ApiError(413, 10013, `Request body is larger than ${limit} bytes`));
      } else chunks.push(c);
    });
    req.once("end", () => resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)));
    req.once("error", reject);
    req.once("close", () => {
      if (!req.complete) reject(new ApiError(400, 10001, "The client aborted the request body"));
    });
  });
}

/** The retry policy of a request: its headers first, then the gateway's retry settings. */
export function retryPolicy(ex: Exchange): RetryPolicy {
  const g = ex.gateway;
  const d = defaultRetry();
  return {
    attempts: ex.opts.maxAttempts ?? g.retry_max_attempts ?? 1,
    delayMs: ex.opts.retryDelay ?? g.retry_delay ?? 0,
    backoff: ex.opts.backoff ?? g.retry_backoff ?? "constant",
    timeoutMs: ex.opts.timeoutMs ?? d.timeoutMs,
  };
}


/**
 * Tells the upstream call (and its retries) that the client went away before its answer was complete.
 * undici takes any EventEmitter with `aborted` as a signal; this is lighter than an AbortController per request.
 */
export class ClientGone extends EventEmitter {
  aborted = false;
}

export function clientGone(ex: Exchange): ClientGone {
  const s = new ClientGone();
  ex.res.once("close", () => {
    if (!ex.res.writableFinished) {
      s.aborted = true;
      s.emit("abort");
    }
  });
  return s;
}
