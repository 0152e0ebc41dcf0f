import { Counter, Histogram, type Registry } from "prom-client";
import { METRIC_PREFIX, statusClass } from "../core/metrics/registry.js";

/**
 * Which part of the platform answered an edge request (a bounded label): the platform's own services, or for a
 * tenant's hostname its Worker, the proxy (origin or cache) or an error page of the edge.
 */
/** The cf-cache-status values (a bounded label: an origin's own header of that name never reaches a label). */
const CACHE_STATUSES = new Set(["HIT", "MISS", "EXPIRED", "STALE", "BYPASS", "REVALIDATED", "UPDATING", "DYNAMIC"]);

/** An answer's cf-cache-status when it is one of the cache's values, else undefined (an origin may send anything). */
export const knownCacheStatus = (value: unknown): string | undefined => (typeof value === "string" && CACHE_STATUSES.has(value) ? value : undefined);

export type EdgeTrafficArea = "api" | "dashboard" | "ai_gateway" | "s3" | "workers" | "proxy" | "error_page";

/**
 * The edge's request metrics: every request of the edge port and the HTTPS port, by the area that answered it, its
 * status class and, for tenants' hostnames, the zone (its name: zones are bounded by what the operator lets tenants
 * create; hostnames, paths and clients never become labels).
 */
export class EdgeMetrics {
  private readonly requests: Counter<"area" | "status_class" | "zone">;
  private readonly duration: Histogram<"area">;
  private readonly responseBytes: Counter<"area">;
  private readonly cacheAnswers: Counter<"cache_status">;
  private readonly cacheBytes: Counter<"cache_status">;
  private readonly edgeErrors: Counter<"code">;

  constructor(registry: Registry) {
    this.cacheAnswers = new Counter({
      name: `${METRIC_PREFIX}cache_answers_total`,
      help: "Proxied answers by cf-cache-status (HIT, MISS, EXPIRED, STALE, BYPASS, REVALIDATED, UPDATING, DYNAMIC)",
      labelNames: ["cache_status"],
      registers: [registry],
    });
    this.cacheBytes = new Counter({
      name: `${METRIC_PREFIX}cache_answer_bytes_total`,
      help: "Bytes of proxied answers written to clients, by cf-cache-status",
      labelNames: ["cache_status"],
      registers: [registry],
    });
    this.edgeErrors = new Counter({
      name: `${METRIC_PREFIX}proxy_origin_errors_total`,
      help: "Proxied requests answered with the edge's error page for a failed origin, by code (520 invalid answer, 521 refused, 522 connect timeout, 523 unreachable, 524 timeout, 525 handshake, 526 invalid certificate)",
      labelNames: ["code"],
      registers: [registry],
    });
    this.requests = new Counter({
      name: `${METRIC_PREFIX}edge_requests_total`,
      help: 'Requests the edge answered, by the area that answered, status class and zone (tenants\' hostnames only; "" otherwise)',
      labelNames: ["area", "status_class", "zone"],
      registers: [registry],
    });
    this.duration = new Histogram({
      name: `${METRIC_PREFIX}edge_request_duration_seconds`,
      help: "Time from a request's head to the end of its answer (or the client going away), by area",
      labelNames: ["area"],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 100],
      registers: [registry],
    });
    this.responseBytes = new Counter({
      name: `${METRIC_PREFIX}edge_response_bytes_total`,
      help: "Bytes the edge wrote to clients (heads and bodies, as counted by the socket's writes), by area",
      labelNames: ["area"],
      registers: [registry],
    });
  }

  /**
   * Counts one request that ended (`status` undefined: the client went away before an answer's head); for the
   * proxy, `cacheStatus` is its `cf-cache-status` (undefined when the answer did not go through the cache).
   */
  record(area: EdgeTrafficArea, status: number | undefined, zone: string, seconds: number, bytes: number, cacheStatus?: string): void {
    this.requests.inc({ area, status_class: status === undefined ? "aborted" : statusClass(status), zone });
    this.duration.observe({ area }, seconds);
    if (bytes > 0) this.responseBytes.inc({ area }, bytes);
    if (area !== "proxy") return;
    if (cacheStatus !== undefined) {
      this.cacheAnswers.inc({ cache_status: cacheStatus });
      if (bytes > 0) this.cacheBytes.inc({ cache_status: cacheStatus }, bytes);
    }
    // The edge's own pages for an origin that failed (520-527: docs/proxy.md).
    if (status !== undefined && status >= 520 && status <= 527) this.edgeErrors.inc({ code: String(status) });
  }
}
