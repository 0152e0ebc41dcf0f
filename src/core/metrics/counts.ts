import type { Histogram, LabelValues } from "prom-client";

/**
 * A histogram's observations counted in plain arrays, for a hot path: observing is a bucket search and three
 * additions, with no label object, no hashing and no prom-client call. `fillHistogram` copies it into prom-client's
 * histogram when scraped (from the histogram's `collect`).
 */
export class HistogramCounts {
  /** Observations per bucket, not cumulative (the last cell: above every bound). */
  readonly buckets: Float64Array;
  sum = 0;
  count = 0;

  constructor(readonly bounds: readonly number[]) {
    this.buckets = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]) i++;
    this.buckets[i]++;
    this.sum += value;
    this.count++;
  }
}

/** What prom-client 15's Histogram keeps per label set (lib/histogram.js: createBaseValues); not in its types. */
interface HistogramEntry {
  labels: Record<string, string | number>;
  bucketValues: Record<string, number>;
  sum: number;
  count: number;
}

/**
 * Sets `histogram`'s series for `labels` to `counts` (call `histogram.reset()` first, in its `collect`). prom-client
 * has no way to add many observations at once, so the series is created with `zero` and its per-bucket values set in
 * the entry prom-client keeps for it (non-cumulative per bucket, as its own observe keeps them; it adds them up when
 * writing the exposition). A prom-client whose entries look otherwise throws here, at the first scrape: the edge's
 * metrics test (src/edge/metrics.test.ts) compares the output with prom-client's own counting.
 */
export function fillHistogram<T extends string>(histogram: Histogram<T>, labels: LabelValues<T>, counts: HistogramCounts): void {
  histogram.zero(labels);
  const entries = (histogram as unknown as { hashMap?: Record<string, HistogramEntry> }).hashMap;
  const entry = entries && Object.values(entries).find((e) => sameLabels(e.labels, labels));
  if (!entry || typeof entry.bucketValues !== "object" || typeof entry.sum !== "number")
    throw new Error("prom-client's Histogram keeps its series otherwise than fillHistogram expects (prom-client 15)");
  const bounds = counts.bounds;
  for (let i = 0; i < bounds.length; i++) {
    if (!(bounds[i] in entry.bucketValues)) throw new Error(`the histogram has no bucket ${bounds[i]}`);
    entry.bucketValues[bounds[i]] = counts.buckets[i];
  }
  entry.sum = counts.sum;
  entry.count = counts.count;
}

function sameLabels(a: Record<string, string | number>, b: Record<string, string | number | undefined>): boolean {
  const keys = Object.keys(b);
  return keys.length === Object.keys(a).length && keys.every((k) => a[k] === b[k]);
}
