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
 * (a request's values never become labels: an unknown operation is "other"); bytes are the request's and the answer's
 * bodies as read and written (streamed or not), counted when the answer ends.
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
      help: `Bytes of ${area} operations by kind and direction (in: the request's body, out: the answer's), as read and written`,
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
    const bytesIn = countRead(req);
    const bytesOut = countWritten(res);
    res.once("close", () => {
      const label = this.label(tracked.op);
      const ok = res.headersSent && res.statusCode < 400 && res.writableFinished;
      this.operations.inc({ op: label, via, outcome: ok ? "ok" : "error" });
      if (bytesIn.n > 0) this.bytes.inc({ op: label, direction: "in" }, bytesIn.n);
      if (bytesOut.n > 0) this.bytes.inc({ op: label, direction: "out" }, bytesOut.n);
    });
    return tracked;
  }
}

/**
 * Counts the body bytes read from `req`, however it is read: every chunk a readable stream hands out goes through its
 * 'data' event (flowing mode, pipe, and read() alike), so the count watches that event without adding a listener
 * (which would start the flow before the handler is ready).
 */
function countRead(req: IncomingMessage): { n: number } {
  const counted = { n: 0 };
  const emit = req.emit;
  req.emit = function (this: IncomingMessage, event: string | symbol, ...args: unknown[]): boolean {
    if (event === "data") counted.n += (args[0] as { length: number }).length;
    return emit.apply(this, [event, ...args] as Parameters<typeof emit>);
  } as typeof req.emit;
  return counted;
}

/** Counts the body bytes written to `res` (write and end; strings by their UTF-8 length). */
function countWritten(res: ServerResponse): { n: number } {
  const counted = { n: 0 };
  const size = (chunk: unknown) => (typeof chunk === "string" ? Buffer.byteLength(chunk) : chunk instanceof Uint8Array ? chunk.byteLength : 0);
  const write = res.write;
  const end = res.end;
  res.write = function (this: ServerResponse, chunk: unknown, ...rest: unknown[]) {
    counted.n += size(chunk);
    return (write as (...a: unknown[]) => boolean).call(this, chunk, ...rest);
  } as typeof res.write;
  res.end = function (this: ServerResponse, chunk?: unknown, ...rest: unknown[]) {
    if (typeof chunk !== "function") counted.n += size(chunk);
    return (end as (...a: unknown[]) => ServerResponse).call(this, chunk, ...rest);
  } as typeof res.end;
  return counted;
}
