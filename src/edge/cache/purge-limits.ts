import type { PurgeSelector } from "./disk-index.js";

/**
 * The hosted purge limits per account (developers.cloudflare.com/cache/how-to/purge-cache, "purge limits"): a
 * token bucket of requests for purges by tag, host, prefix and everything, and a rate of URLs for purges by URL
 * (hosted: a moving average; here a bucket of one second's URLs, the same average over a second).
 */
export const PURGE_PLANS = {
  free: { requestsPerSecond: 5 / 60, requestBucket: 25, urlsPerSecond: 800 },
  pro: { requestsPerSecond: 5, requestBucket: 25, urlsPerSecond: 1500 },
  business: { requestsPerSecond: 10, requestBucket: 50, urlsPerSecond: 1500 },
  enterprise: { requestsPerSecond: 50, requestBucket: 500, urlsPerSecond: 3000 },
} as const;

export type PurgePlan = keyof typeof PURGE_PLANS;

class Bucket {
  private tokens: number;
  private at: number;

  constructor(
    private readonly perSecond: number,
    readonly size: number,
    now: number,
  ) {
    this.tokens = size;
    this.at = now;
  }

  private refill(now: number): void {
    this.tokens = Math.min(this.size, this.tokens + ((now - this.at) / 1000) * this.perSecond);
    this.at = now;
  }

  /** Takes `n` tokens, or none and answers the seconds until there would be `n`. */
  take(n: number, now: number): number {
    this.refill(now);
    if (this.tokens >= n) {
      this.tokens -= n;
      return 0;
    }
    return Math.ceil((n - this.tokens) / this.perSecond);
  }

  full(now: number): boolean {
    this.refill(now);
    return this.tokens >= this.size;
  }
}

/** Buckets kept before full ones (accounts idle long enough to be back at the start) are dropped. */
const MAX_BUCKETS = 10_000;

/**
 * The purge limits of one plan, per account, on this node (each node counts for itself: with N nodes behind one
 * name an account may purge up to N times the rate; docs/cache.md).
 */
export class PurgeLimits {
  private readonly requests = new Map<string, Bucket>();
  private readonly urls = new Map<string, Bucket>();

  constructor(readonly plan: PurgePlan) {}

  /** Counts a purge of `accountId`: 0, or (over the plan's limit, and then nothing is counted) the seconds to wait. */
  take(accountId: string, selector: PurgeSelector, now = Date.now()): number {
    const limits = PURGE_PLANS[this.plan];
    const byUrl = selector.kind === "urls";
    const buckets = byUrl ? this.urls : this.requests;
    let bucket = buckets.get(accountId);
    if (!bucket) {
      if (buckets.size >= MAX_BUCKETS) for (const [id, b] of buckets) if (b.full(now)) buckets.delete(id);
      bucket = byUrl ? new Bucket(limits.urlsPerSecond, limits.urlsPerSecond, now) : new Bucket(limits.requestsPerSecond, limits.requestBucket, now);
      buckets.set(accountId, bucket);
    }
    // A URL purge counts the URLs it names (one item without a scheme names two keys but is one URL to the caller).
    return bucket.take(byUrl ? new Set(selector.urls.map(urlOfItem)).size : 1, now);
  }
}

/** The caller's URL of a selector item: scheme dropped, variant dropped. */
const urlOfItem = (item: string) => item.replace(/^https?:\/\//, "").replace(/\n.*$/s, "");
