interface Window {
  start: number;
  count: number;
  previous: number;
}

/**
 * Requests per interval, per gateway, in memory. `fixed` counts in clock-aligned windows; `sliding`
 * weighs the previous window by how much of it still overlaps the trailing interval (the usual approximation).
 */
export class RateLimiter {
  private readonly windows = new Map<string, Window>();

  /** Counts one request; false when it is over the limit (and then it is not counted). */
  take(key: string, limit: number, intervalSec: number, technique: "fixed" | "sliding", now = Date.now()): boolean {
    if (limit <= 0 || intervalSec <= 0) return true;
    const size = intervalSec * 1000;
    const start = Math.floor(now / size) * size;
    let w = this.windows.get(key);
    if (!w) this.windows.set(key, (w = { start, count: 0, previous: 0 }));
    if (w.start !== start) {
      w.previous = w.start === start - size ? w.count : 0;
      w.start = start;
      w.count = 0;
    }
    const used = technique === "sliding" ? w.count + w.previous * (1 - (now - start) / size) : w.count;
    if (used >= limit) return false;
    w.count++;
    return true;
  }

  forget(key: string): void {
    this.windows.delete(key);
  }
}
