import type { IncomingMessage, ServerResponse } from "node:http";
import { Counter, type Registry } from "prom-client";
import { METRIC_PREFIX } from "./registry.js";

/** How an operation reached its area: a Worker's binding, the S3 API, the v4 API. */
export type OperationVia = "binding" | "s3" | "api";

/** One operation being served; `op` may be set once known (from a body, say) until its answer ends. */
export interface TrackedOperation {
  op: string;
}

/**
 * The operations of a data area (KV, R2, D1, Queues): `edgeplatform_<area>_operations_total{op, via, outcome}` and
 * `edgeplatform_<area>_bytes_total{op, direction}`. The area names its operations from a fixed set of its own
 * (a request's values never become labels: an unknown operation is "other"); bytes are those the request and its
 * answer declare (Content-Length), counted when the answer ends.
 */
export class OperationMetrics {
  private readonly operations: Counter<"op" | "via" | "outcome">;
  private readonly bytes: Counter<"op" | "direction">;

  constructor(
    registry: Registry,
    area: string,
    /** The operations with a label of their own. */
    private readonly known: ReadonlySet<string>,
  ) {
    this.operations = new Counter({
      name: `${METRIC_PREFIX}${area}_operations_total`,
      help: `${area} operations by kind, by how they came (binding: a Worker's; s3: the S3 API; api: the v4 API) and outcome (ok, error: a 4xx/5xx answer or the caller gone)`,
      labelNames: ["op", "via", "outcome"],
      registers: [registry],
    });
    this.bytes = new Counter({
      name: `${METRIC_PREFIX}${area}_bytes_total`,
      help: `Bytes of ${area} operations by kind and direction (in: the request's body, out: the answer's), as their Content-Length declares`,
      labelNames: ["op", "direction"],
      registers: [registry],
    });
  }

  /** The label for an operation's name: itself when known, else "other". */
  label(op: string): string {
    return this.known.has(op) ? op : "other";
  }

  /** Counts the operation `req` asks for when `res` ends; set the returned `op` if it is known only later. */
  track(op: string, via: OperationVia, req: IncomingMessage, res: ServerResponse): TrackedOperation {
    const tracked = { op };
    res.once("close", () => {
      const label = this.label(tracked.op);
      const ok = res.headersSent && res.statusCode < 400 && res.writableFinished;
      this.operations.inc({ op: label, via, outcome: ok ? "ok" : "error" });
      const bytesIn = Number(req.headers["content-length"] ?? 0);
      if (bytesIn > 0 && Number.isFinite(bytesIn)) this.bytes.inc({ op: label, direction: "in" }, bytesIn);
      const bytesOut = Number(res.getHeader("content-length") ?? 0);
      if (bytesOut > 0 && Number.isFinite(bytesOut) && req.method !== "HEAD") this.bytes.inc({ op: label, direction: "out" }, bytesOut);
    });
    return tracked;
  }
}
