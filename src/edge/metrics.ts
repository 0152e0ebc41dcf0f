import { Counter, Histogram, type Registry } from "prom-client";
import { fillHistogram, HistogramCounts } from "../core/metrics/counts.js";
import { METRIC_PREFIX } from "../core/metrics/registry.js";

/** The cf-cache-status values (a bounded label: an origin's own header of that name never reaches a label). */
const CACHE_STATUS_LIST = ["HIT", "MISS", "EXPIRED", "STALE", "BYPASS", "REVALIDATED", "UPDATING", "DYNAMIC"] as const;
const CACHE_STATUS_INDEX = new Map<string, number>(CACHE_STATUS_LIST.map((s, i) => [s, i]));

/** An answer's cf-cache-status when it is one of the cache's values, else undefined (an origin may send anything). */
export const knownCacheStatus = (value: unknown): string | undefined => (typeof value === "string" && CACHE_STATUS_INDEX.has(value) ? value : undefined);

/**
 * Which part of the platform answered an edge request (a bounded label): the platform's own services, or for a
 * tenant's hostname its Worker, the proxy (origin or cache) or an error page of the edge.
 */
export type EdgeTrafficArea = "api" | "dashboard" | "ai_gateway" | "s3" | "workers" | "proxy" | "error_page";
const AREAS: readonly EdgeTrafficArea[] = ["api", "dashboard", "ai_gateway", "s3", "workers", "proxy", "error_page"];
const AREA_INDEX: Readonly<Record<EdgeTrafficArea, number>> = { api: 0, dashboard: 1, ai_gateway: 2, s3: 3, workers: 4, proxy: 5, error_page: 6 };

/** The status classes, as core/metrics/registry.ts's statusClass names them, and "aborted" (no answer's head). */
const STATUS_CLASSES = ["1xx", "2xx", "3xx", "4xx", "5xx", "other", "aborted"] as const;
const statusClassIndex = (status: number | undefined): number => (status === undefined ? 6 : status >= 100 && status < 600 ? Math.floor(status / 100) - 1 : 5);

const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 100] as const;

/** Where the dispatch counts each request that ended: the metrics, or (in an edge thread) a batch for the main thread's. */
export interface EdgeRequestCounter {
  record(area: EdgeTrafficArea, status: number | undefined, zone: string, seconds: number, bytes: number, cacheStatus?: string): void;
}

/**
 * The edge's request metrics: every request of the edge port and the HTTPS port, by the area that answered it, its
 * status class and, for tenants' hostnames, the zone (its name: zones are bounded by what the operator lets tenants
 * create; hostnames, paths and clients never become labels).
 *
 * Counting is on every request's path, so it is done in plain arrays indexed by small numbers (area, status class, a
 * slot per zone name, histogram bucket), as the DNS server counts (src/dns/metrics.ts), and copied into prom-client's
 * metrics only when scraped (their `collect`): prom-client's own `inc({...})` builds and hashes a label set per call,
 * which cost the edge's cheapest answer about a quarter more CPU (docs/benchmarks.md, Metrics).
 */
export class EdgeMetrics implements EdgeRequestCounter {
  /** Requests per zone slot (slot 0: no zone), each AREAS × STATUS_CLASSES cells. */
  private readonly requests: Float64Array[] = [new Float64Array(AREAS.length * STATUS_CLASSES.length)];
  /** Zone names by slot and slots by name: a slot is given to a zone name at its first request and kept. */
  private readonly zoneNames: string[] = [""];
  private readonly zoneSlots = new Map<string, number>([["", 0]]);
  private readonly duration = AREAS.map(() => new HistogramCounts(DURATION_BUCKETS));
  private readonly responseBytes = new Float64Array(AREAS.length);
  private readonly cacheAnswers = new Float64Array(CACHE_STATUS_LIST.length);
  private readonly cacheBytes = new Float64Array(CACHE_STATUS_LIST.length);
  /** Origin error pages 520…527, by code - 520. */
  private readonly originErrors = new Float64Array(8);

  constructor(registry: Registry) {
    const m = this;
    new Counter({
      name: `${METRIC_PREFIX}cache_answers_total`,
      help: "Proxied answers by cf-cache-status (HIT, MISS, EXPIRED, STALE, BYPASS, REVALIDATED, UPDATING, DYNAMIC)",
      labelNames: ["cache_status"],
      registers: [registry],
      collect() {
        this.reset();
        m.cacheAnswers.forEach((n, i) => n > 0 && this.inc({ cache_status: CACHE_STATUS_LIST[i] }, n));
      },
    });
    new Counter({
      name: `${METRIC_PREFIX}cache_answer_bytes_total`,
      help: "Bytes of proxied answers written to clients, by cf-cache-status",
      labelNames: ["cache_status"],
      registers: [registry],
      collect() {
        this.reset();
        m.cacheBytes.forEach((n, i) => n > 0 && this.inc({ cache_status: CACHE_STATUS_LIST[i] }, n));
      },
    });
    new Counter({
      name: `${METRIC_PREFIX}proxy_origin_errors_total`,
      help: "Proxied requests answered with the edge's error page for a failed origin, by code (520 invalid answer, 521 refused, 522 connect timeout, 523 unreachable, 524 timeout, 525 handshake, 526 invalid certificate)",
      labelNames: ["code"],
      registers: [registry],
      collect() {
        this.reset();
        m.originErrors.forEach((n, i) => n > 0 && this.inc({ code: String(520 + i) }, n));
      },
    });
    new Counter({
      name: `${METRIC_PREFIX}edge_requests_total`,
      help: 'Requests the edge answered, by the area that answered, status class and zone (tenants\' hostnames only; "" otherwise)',
      labelNames: ["area", "status_class", "zone"],
      registers: [registry],
      collect() {
        this.reset();
        for (let slot = 0; slot < m.requests.length; slot++) {
          const cells = m.requests[slot];
          for (let i = 0; i < cells.length; i++)
            if (cells[i] > 0)
              this.inc(
                { area: AREAS[Math.floor(i / STATUS_CLASSES.length)], status_class: STATUS_CLASSES[i % STATUS_CLASSES.length], zone: m.zoneNames[slot] },
                cells[i],
              );
        }
      },
    });
    new Histogram({
      name: `${METRIC_PREFIX}edge_request_duration_seconds`,
      help: "Time from a request's head to the end of its answer (or the client going away), by area",
      labelNames: ["area"],
      buckets: [...DURATION_BUCKETS],
      registers: [registry],
      collect() {
        this.reset();
        m.duration.forEach((counts, i) => counts.count > 0 && fillHistogram(this, { area: AREAS[i] }, counts));
      },
    });
    new Counter({
      name: `${METRIC_PREFIX}edge_response_bytes_total`,
      help: "Bytes the edge wrote to clients (heads and bodies, as counted by the socket's writes), by area",
      labelNames: ["area"],
      registers: [registry],
      collect() {
        this.reset();
        m.responseBytes.forEach((n, i) => n > 0 && this.inc({ area: AREAS[i] }, n));
      },
    });
  }

  /**
   * Counts one request that ended (`status` undefined: the client went away before an answer's head); for the
   * proxy, `cacheStatus` is its `cf-cache-status` (undefined when the answer did not go through the cache).
   */
  record(area: EdgeTrafficArea, status: number | undefined, zone: string, seconds: number, bytes: number, cacheStatus?: string): void {
    const a = AREA_INDEX[area];
    let slot = this.zoneSlots.get(zone);
    if (slot === undefined) {
      slot = this.requests.length;
      this.zoneSlots.set(zone, slot);
      this.zoneNames.push(zone);
      this.requests.push(new Float64Array(AREAS.length * STATUS_CLASSES.length));
    }
    this.requests[slot][a * STATUS_CLASSES.length + statusClassIndex(status)]++;
    this.duration[a].observe(seconds);
    if (bytes > 0) this.responseBytes[a] += bytes;
    if (area !== "proxy") return;
    if (cacheStatus !== undefined) {
      const c = CACHE_STATUS_INDEX.get(cacheStatus);
      if (c !== undefined) {
        this.cacheAnswers[c]++;
        if (bytes > 0) this.cacheBytes[c] += bytes;
      }
    }
    // The edge's own pages for an origin that failed (520-527: docs/proxy.md).
    if (status !== undefined && status >= 520 && status <= 527) this.originErrors[status - 520]++;
  }
}
