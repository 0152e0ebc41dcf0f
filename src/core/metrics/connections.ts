import { Gauge, type Registry } from "prom-client";
import { METRIC_PREFIX } from "./registry.js";

/**
 * `edgeplatform_edge_open_connections{listener}`: the connections the edge holds open now, as its connection limits
 * count them (core/http/connection-limits.ts: from accept to close, WebSockets included), read when scraped.
 * `listener` is "http" for the edge port and "https" for the HTTPS port (counted from accept, before the handshake).
 */
export function registerConnectionMetrics(registry: Registry, open: () => { plain: number; tls: number }): void {
  new Gauge({
    name: `${METRIC_PREFIX}edge_open_connections`,
    help: 'Connections open on the edge port (listener "http") and the HTTPS port ("https", from accept, before the handshake), as the connection limits count them',
    labelNames: ["listener"],
    registers: [registry],
    collect() {
      const now = open();
      this.set({ listener: "http" }, now.plain);
      this.set({ listener: "https" }, now.tls);
    },
  });
}
