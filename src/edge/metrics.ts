import { Counter, Histogram, type Registry } from "prom-client";
import { METRIC_PREFIX, statusClass } from "../core/metrics/registry.js";

/**
 * Which part of the platform answered an edge request (a bounded label): the platform's own services, or for a
 * tenant's hostname its Worker, the proxy (origin or cache) or an error page of the edge.
 */
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

  constructor(registry: Registry) {
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

  /** Counts one request that ended (`status` undefined: the client went away before an answer's head). */
  record(area: EdgeTrafficArea, status: number | undefined, zone: string, seconds: number, bytes: number): void {
    this.requests.inc({ area, status_class: status === undefined ? "aborted" : statusClass(status), zone });
    this.duration.observe({ area }, seconds);
    if (bytes > 0) this.responseBytes.inc({ area }, bytes);
  }
}
