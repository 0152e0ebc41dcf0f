import type { IncomingMessage, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import { CoreErrors } from "../errors.js";
import { toEnvelope } from "../errors/render.js";
import { refuseOnSocket } from "./transport-errors.js";

export type ReadinessState = "starting" | "ready" | "stopping";

/** What a client is told to wait before it asks again (seconds): starting takes a few seconds at most. */
const RETRY_AFTER_S = 1;

/** The paths a load balancer or an operator asks while the node is not ready: answered whatever the state. */
const PROBE_PATHS = new Set(["/healthz", "/readyz"]);

/**
 * Whether this node takes traffic. The edge port listens before the services start (they need the port's URL, and the
 * HTTPS port hands its connections to the edge port's server), but until every deployed Worker runs, the routes and
 * Custom Domains are read and the certificates are in memory, a request would get the wrong answer: "no worker is
 * deployed" (404), the v4 API at a Custom Domain's hostname, no certificate. So until `ready()` every request but the
 * probes is answered 503 with Retry-After, and the probes say "starting"; once stopping, the same again, so a load
 * balancer takes the node out while it drains.
 */
export class Readiness {
  private current: ReadinessState = "starting";

  get state(): ReadinessState {
    return this.current;
  }

  get isReady(): boolean {
    return this.current === "ready";
  }

  ready(): void {
    if (this.current === "starting") this.current = "ready";
  }

  stopping(): void {
    this.current = "stopping";
  }

  /** Answers `req` 503 when the node is not ready and it is not a probe; true when it did. */
  refuse(req: IncomingMessage, res: ServerResponse): boolean {
    if (this.current === "ready" || isProbe(req)) return false;
    const err = CoreErrors.notReady(this.current);
    const body = JSON.stringify(toEnvelope(err));
    res.writeHead(err.status, {
      "content-type": "application/json",
      "content-length": Buffer.byteLength(body),
      "retry-after": String(RETRY_AFTER_S),
      connection: "close",
    });
    res.end(body);
    return true;
  }

  /** The same for a request that asks to upgrade its connection (a WebSocket, a tail session). */
  refuseUpgrade(socket: Duplex): boolean {
    if (this.current === "ready") return false;
    refuseOnSocket(socket, CoreErrors.notReady(this.current));
    return true;
  }
}

function isProbe(req: IncomingMessage): boolean {
  const url = req.url ?? "";
  const q = url.indexOf("?");
  return PROBE_PATHS.has(q < 0 ? url : url.slice(0, q));
}
