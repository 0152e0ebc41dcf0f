import type { IncomingMessage, ServerResponse } from "node:http";
import type { Gateway } from "../gateways/store.js";
import type { RequestOptions } from "./request-options.js";
import { ClientGone, DEFAULT_TIMEOUT_MS, type RetryPolicy } from "./upstream.js";

/** One client request on its way through the gateway, after authentication and header parsing. */
export interface Exchange {
  req: IncomingMessage;
  res: ServerResponse;
  /** performance.now() when the request arrived, and when its answer ended, for the log's duration. */
  started: number;
  ended: number;
  /** Date.now() when the request arrived (formatted only when the log is written). */
  arrivedAt: number;
  gateway: Gateway;
  authenticated: boolean;
  opts: RequestOptions;
  /** Id of the log this request will write, or null when it is not logged. */
  logId: string | null;
}

/** The retry policy of a request: its headers first, then the gateway's retry settings. */
export function retryPolicy(ex: Exchange): RetryPolicy {
  const g = ex.gateway;
  return {
    attempts: ex.opts.maxAttempts ?? g.retry_max_attempts ?? 1,
    delayMs: ex.opts.retryDelay ?? g.retry_delay ?? 0,
    backoff: ex.opts.backoff ?? g.retry_backoff ?? "constant",
    timeoutMs: ex.opts.timeoutMs ?? DEFAULT_TIMEOUT_MS,
  };
}

/** A ClientGone that fires when the exchange's client closes its connection before the answer is complete. */
export function clientGone(ex: Exchange): ClientGone {
  const s = new ClientGone();
  ex.res.once("close", () => {
    if (!ex.res.writableFinished) s.fire();
  });
  return s;
}
