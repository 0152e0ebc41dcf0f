import { collectDefaultMetrics, Registry } from "prom-client";

/** Every metric's name starts with it (Prometheus' convention: one prefix per exporter). */
export const METRIC_PREFIX = "edgeplatform_";

/**
 * The node's one Prometheus registry. Areas declare their metrics on it (each in its own `metrics.ts`, named
 * `edgeplatform_<area>_<what>_<unit>`), with label values from bounded sets only: an area, a status class, a record
 * type, a zone or bucket name (bounded by what the operator lets tenants create), never a key, a path or a client
 * address. The process' own health (CPU, memory, event-loop lag, handles, GC) is collected by prom-client.
 */
export function createMetricsRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: METRIC_PREFIX });
  // prom-client names three gauges `…_total`, which Prometheus reserves for counters (promtool's lint refuses them);
  // the handle and request counts they carry are in nodejs_active_resources (by type) anyway.
  for (const name of ["nodejs_active_handles_total", "nodejs_active_requests_total", "nodejs_active_resources_total"])
    registry.removeSingleMetric(`${METRIC_PREFIX}${name}`);
  return registry;
}

/** "2xx" … "5xx" for a status code (a bounded label). */
export function statusClass(status: number): string {
  if (status >= 100 && status < 600) return `${Math.floor(status / 100)}xx`;
  return "other";
}
