import type { PurgeSelector } from "./disk-index.js";
import type { BucketShape, PurgeLimitStore } from "./purge-limits-store.js";

/**
 * The hosted purge limits per account (developers.cloudflare.com/cache/how-to/purge-cache, "purge limits"): a
 * token bucket of requests for purges by tag, host, prefix and everything, and a rate of URLs for purges by URL
 * (hosted: a moving average; here a bucket of one second's URLs, the same average over a second). Per request:
 * 100 tags, hosts or prefixes on every plan; 100 URLs, 500 on Enterprise.
 */
export const PURGE_PLANS = {
  free: { requestsPerSecond: 5 / 60, requestBucket: 25, urlsPerSecond: 800, maxUrlsPerRequest: 100, maxItemsPerRequest: 100 },
  pro: { requestsPerSecond: 5, requestBucket: 25, urlsPerSecond: 1500, maxUrlsPerRequest: 100, maxItemsPerRequest: 100 },
  business: { requestsPerSecond: 10, requestBucket: 50, urlsPerSecond: 1500, maxUrlsPerRequest: 100, maxItemsPerRequest: 100 },
  enterprise: { requestsPerSecond: 50, requestBucket: 500, urlsPerSecond: 3000, maxUrlsPerRequest: 500, maxItemsPerRequest: 100 },
} as const;

export type PurgePlan = keyof typeof PURGE_PLANS;

/** The items one purge request may name under `plan`: `files` (URLs) and the other lists. */
export const perRequestLimits = (plan: PurgePlan) => ({ files: PURGE_PLANS[plan].maxUrlsPerRequest, items: PURGE_PLANS[plan].maxItemsPerRequest });

/**
 * The purge limits of one plan, per account, counted in the rows store every node shares (`store`): behind N nodes
 * an account has the plan's buckets once, not N times, and (embedded) they survive a restart, as the hosted buckets
 * do not start over when a server does.
 */
export class PurgeLimits {
  private readonly requests: BucketShape;
  private readonly urls: BucketShape;

  constructor(
    readonly plan: PurgePlan,
    private readonly store: PurgeLimitStore,
  ) {
    const limits = PURGE_PLANS[plan];
    this.requests = { perSecond: limits.requestsPerSecond, size: limits.requestBucket };
    this.urls = { perSecond: limits.urlsPerSecond, size: limits.urlsPerSecond };
  }

  /** Counts a purge of `accountId`: 0, or (over the plan's limit, and then nothing is counted) the seconds to wait. */
  async take(accountId: string, selector: PurgeSelector, now = Date.now()): Promise<number> {
    const byUrl = selector.kind === "urls";
    const shape = byUrl ? this.urls : this.requests;
    // A URL purge counts the URLs it names (one item without a scheme names two keys but is one URL to the caller).
    const n = byUrl ? new Set(selector.urls.map(urlOfItem)).size : 1;
    const { taken, tokens } = await this.store.take(accountId, byUrl ? "urls" : "requests", shape, n, now);
    return taken ? 0 : Math.max(1, Math.ceil((n - tokens) / shape.perSecond));
  }
}

/** The caller's URL of a selector item: scheme, port (purge.ts names a URL with a port with and without it) and variant dropped. */
const urlOfItem = (item: string) =>
  item
    .replace(/^https?:\/\//, "")
    .replace(/^([^/]*):\d+/, "$1")
    .replace(/\n.*$/s, "");
