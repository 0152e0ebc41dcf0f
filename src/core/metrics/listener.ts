import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Registry } from "prom-client";
import type { Logger } from "../logger.js";

/**
 * The metrics listener: `GET /metrics` in Prometheus' text exposition format, on an address of its own
 * (--metrics-host/--metrics-port, loopback unless the operator says otherwise), so scrapes never share the edge
 * port's limits and tenants never see the platform's numbers.
 */
export class MetricsListener {
  private server?: Server;

  constructor(
    private readonly registry: Registry,
    private readonly log: Logger,
  ) {}

  async listen(host: string, port: number): Promise<string> {
    const server = createServer((req, res) => {
      const path = (req.url ?? "/").split("?")[0];
      if (path !== "/metrics" || (req.method !== "GET" && req.method !== "HEAD")) {
        res.writeHead(404, { "content-type": "text/plain" }).end("Not found: the metrics are at GET /metrics\n");
        return;
      }
      this.registry.metrics().then(
        (text) => {
          res.writeHead(200, { "content-type": this.registry.contentType, "content-length": Buffer.byteLength(text) });
          res.end(req.method === "HEAD" ? undefined : text);
        },
        (err: unknown) => {
          this.log.error({ err }, "metrics not collected");
          res.writeHead(500, { "content-type": "text/plain" }).end("metrics could not be collected\n");
        },
      );
    });
    server.keepAliveTimeout = 65_000;
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, host, () => {
        server.off("error", reject);
        resolve();
      });
    });
    this.server = server;
    const addr = server.address() as AddressInfo;
    return `http://${addr.family === "IPv6" ? `[${addr.address}]` : addr.address}:${addr.port}/metrics`;
  }

  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }
}
