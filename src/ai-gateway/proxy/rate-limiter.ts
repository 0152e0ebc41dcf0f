import type { Gateway } from "../gateways/store.js";

/**
 * A gateway's rate limit: `rate_limiting_limit` requests per `rate_limiting_interval` seconds. `fixed` counts in
 * clock-aligned windows; `sliding` weighs the previous window by how much of it still overlaps the trailing interval
 * (the usual approximation). A gateway's settings version (`modified_at`) is part of the count's key, so a changed
 * gateway starts with a fresh window, on every node.
 */
export interface RateLimiter {
  /**
   * Counts one request; false when it is over the limit (and then it is not counted). Answered at once when the
   * counter is in this process; a promise when it is shared (PostgreSQL), and only for a gateway with a limit.
   */
  take(g: Gateway, now?: number): boolean | Promise<boolean>;
  /** Drops what is kept in memory of a gateway that changed or went away. */
  forget(accountId: string, gatewayId: string): void;
}

/** Whether the gateway has a limit at all. */
export const isRateLimited = (g: Gateway): boolean => g.rate_limiting_limit > 0 && g.rate_limiting_interval > 0;

/** The clock-aligned window `now` falls in (UNIX ms), and how much of the previous one a sliding count still weighs. */
export function rateWindow(g: Gateway, now: number): { start: number; size: number; previousWeight: number } {
  const size = g.rate_limiting_interval * 1000;
  const start = Math.floor(now / size) * size;
  return { start, size, previousWeight: g.rate_limiting_technique === "sliding" ? 1 - (now - start) / size : 0 };
}

interface Window {
  version: string;
  start: number;
  count: number;
  previous: number;
}

/** The embedded platform's counters: in memory, per process (one node has them all). */
export class MemoryRateLimiter implements RateLimiter {
  private readonly windows = new Map<string, Window>();

  take(g: Gateway, now = Date.now()): boolean {
    if (!isRateLimited(g)) return true;
    const { start, size, previousWeight } = rateWindow(g, now);
    const key = `${g.account_id}/${g.id}`;
    let w = this.windows.get(key);
    if (!w || w.version !== g.modified_at) this.windows.set(key, (w = { version: g.modified_at, start, count: 0, previous: 0 }));
    if (w.start !== start) {
      w.previous = w.start === start - size ? w.count : 0;
      w.start = start;
      w.count = 0;
    }
    if (w.count + w.previous * previousWeight >= g.rate_limiting_limit) return false;
    w.count++;
    return true;
  }

  forget(accountId: string, gatewayId: string): void {
    this.windows.delete(`${accountId}/${gatewayId}`);
  }
}
