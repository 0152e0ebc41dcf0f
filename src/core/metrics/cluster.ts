import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import type { Bus } from "../cluster/bus.js";
import type { Postgres } from "../db/postgres.js";
import { METRIC_PREFIX } from "./registry.js";

/**
 * Areas of notices are constants of the code (e.g. "dns", "worker_routes"), never a tenant's words; anything else
 * on the channel (another program's NOTIFY) is "other", so the label stays bounded.
 */
const AREA_NAME = /^[a-z][a-z_-]{0,31}$/;
const MAX_AREAS = 50;

/**
 * Distributed mode's own metrics (only with --database-url): the node's PostgreSQL pool, read when scraped, and the
 * change-notice bus: notices received by area with their delay from publish to receipt (the publisher's clock against
 * this node's: clocks of the nodes are assumed in step, as NTP keeps them), and reconnections of its listening
 * connection.
 */
export function registerClusterMetrics(registry: Registry, postgres: Postgres | undefined, bus: Bus): void {
  if (postgres) {
    const pool = postgres.pool;
    for (const [what, read, help] of [
      ["total", () => pool.totalCount, "Connections the node's PostgreSQL pool holds (--database-pool-size at most)"],
      ["idle", () => pool.idleCount, "Connections of the PostgreSQL pool not in use"],
      ["waiting", () => pool.waitingCount, "Queries waiting for a connection of the PostgreSQL pool"],
    ] as const)
      new Gauge({
        name: `${METRIC_PREFIX}postgres_pool_${what === "waiting" ? "waiting_queries" : `${what}_connections`}`,
        help,
        registers: [registry],
        collect() {
          this.set(read());
        },
      });
  }
  const observed = bus.observed;
  if (!observed) return;
  const lag = new Histogram({
    name: `${METRIC_PREFIX}bus_notice_lag_seconds`,
    help: "Delay of change notices between nodes, from publish to receipt, by area",
    labelNames: ["area"],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const seen = new Set<string>();
  observed.onNotice = (area, seconds) => {
    if (!seen.has(area) && seen.size < MAX_AREAS && AREA_NAME.test(area)) seen.add(area);
    lag.observe({ area: seen.has(area) ? area : "other" }, seconds);
  };
  new Counter({
    name: `${METRIC_PREFIX}bus_reconnects_total`,
    help: "Times the bus's listening connection to PostgreSQL was opened again after being lost (notices sent meanwhile are lost; every cache reloads)",
    registers: [registry],
    collect() {
      this.reset();
      this.inc(observed.reconnects);
    },
  });
}
