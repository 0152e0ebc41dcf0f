import type { IncomingMessage } from "node:http";
import { performance } from "node:perf_hooks";

/**
 * Closes the connection of a request whose body stops arriving for `idleMs`. The server's own limits do not cover
 * this: headersTimeout ends once the headers are in, and requestTimeout is off (a large upload may take long), so a
 * client that sent headers announcing a body and then nothing held its connection, and the memory behind it, forever.
 * Only the client's silence counts: once the body is complete, waiting on a Worker or the disk is ours.
 *
 * One timer for the whole server reads each watched connection's byte count. Nothing is attached per request: a
 * `data` listener on the socket would take the connection off the HTTP parser's native read path for the rest of
 * its life (Node then feeds the parser from JavaScript), which every keep-alive request after it would pay for.
 */
export class StalledBodies {
  private readonly watched = new Map<IncomingMessage, { bytes: number; since: number }>();
  private timer?: NodeJS.Timeout;

  constructor(private readonly idleMs: number) {}

  /** Watches `req` until its body is complete, if it has one. */
  watch(req: IncomingMessage): void {
    const length = req.headers["content-length"];
    if (req.headers["transfer-encoding"] === undefined && (length === undefined || length === "0")) return;
    this.watched.set(req, { bytes: req.socket.bytesRead, since: performance.now() });
    if (!this.timer) {
      // A quarter of the limit between looks (at most a second): a connection is closed within 1.25× the limit.
      this.timer = setInterval(() => this.sweep(), Math.min(Math.max(this.idleMs / 4, 10), 1000));
      this.timer.unref();
    }
  }

  private sweep(): void {
    const now = performance.now();
    for (const [req, seen] of this.watched) {
      const socket = req.socket;
      if (req.complete || req.destroyed || !socket || socket.destroyed) {
        this.watched.delete(req);
        continue;
      }
      const bytes = socket.bytesRead;
      if (bytes !== seen.bytes) {
        seen.bytes = bytes;
        seen.since = now;
      } else if (now - seen.since >= this.idleMs) {
        this.watched.delete(req);
        socket.destroy();
      }
    }
    if (this.watched.size === 0) this.close();
  }

  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.watched.clear();
  }
}
