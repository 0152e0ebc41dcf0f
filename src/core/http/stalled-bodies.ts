import type { IncomingMessage, ServerResponse } from "node:http";
import { performance } from "node:perf_hooks";
import { CoreErrors, type EdgeError } from "../errors.js";
import { refuseInFlight } from "./transport-errors.js";

export interface BodyPace {
  /** A body that brings no byte for this long (ms) is refused. */
  idleMs: number;
  /**
   * A body must bring at least this many bytes a second, on average over each `idleMs` window after the first
   * (Apache's mod_reqtimeout MinRate rule); 0 turns the floor off. A body shorter than a window's share has that
   * window to arrive whole.
   */
  minBytesPerSecond: number;
}

interface Watched {
  res: ServerResponse;
  /** The connection's byte count at the last look, and when it last changed. */
  bytes: number;
  progressAt: number;
  /** Where the current rate window started: its byte count and time. */
  windowBytes: number;
  windowAt: number;
}

/**
 * Refuses a request whose body arrives too slowly, with a 408 when no answer has started, and closes its
 * connection. The server's own limits do not cover this: headersTimeout ends once the headers are in, and
 * requestTimeout is off (a large upload may take long), so a client that sent headers announcing a body and then
 * nothing, or a byte a minute, held its connection and the memory behind it forever. Two rules:
 * - idle: no byte for `idleMs` (nginx's client_body_timeout);
 * - pace: fewer than `minBytesPerSecond × idleMs` bytes in a window of `idleMs` (mod_reqtimeout's MinRate). Windows
 *   follow each other (they do not slide), so a client must send the floor's share in every window, and cannot
 *   bank a fast start against a trickle later: at most one window's worth of credit.
 *
 * Only the client's slowness counts. Once the body is complete, waiting on a Worker or the disk is ours; and while
 * the route is not reading (its buffer is full, so Node stops reading the socket: a Worker that reads its body
 * slowly, a slow disk) the client is not judged: a window is judged only when every look in it found the route
 * taking the body in. Nor while our own event loop was stalled (a long garbage collection, synchronous work): the
 * bytes the client sent meanwhile wait in the kernel, unread and uncounted, and the first look after the stall comes
 * before the reads that count them. A look that comes an interval or more later than its timer was due judges no
 * one: both rules start again from it, as when the route was not reading.
 *
 * One timer for the whole server reads each watched connection's byte count. Nothing is attached per request: a
 * `data` listener on the socket would take the connection off the HTTP parser's native read path for the rest of
 * its life (Node then feeds the parser from JavaScript), which every keep-alive request after it would pay for.
 *
 * A request is watched only if its body is still incomplete at the end of the event-loop turn it arrived in: most
 * bodies come in the same read as their head and are complete by then. Holding every request (and its response)
 * until the next look, up to a second, kept each one's objects alive through the young generation's collections,
 * which promoted them: measured at 8 clients on the AI gateway, 1.3-1.7 MB promoted per scavenge.
 */
export class StalledBodies {
  private readonly watched = new Map<IncomingMessage, Watched>();
  /** Requests with a body that arrived in this turn, request then response; sorted once the turn's reads are done. */
  private readonly arrived: (IncomingMessage | ServerResponse)[] = [];
  private sorting = false;
  private readonly intervalMs: number;
  private timer?: NodeJS.Timeout;
  /** When the last look was (or the timer was started): the next is due an interval later. */
  private lastLookAt = 0;

  constructor(
    private readonly pace: BodyPace,
    /** Milliseconds on a monotonic clock; tests set the time of each look. */
    private readonly now: () => number = () => performance.now(),
  ) {
    // A quarter of the window between looks (at most a second): a connection is refused within 1.25× the limit.
    this.intervalMs = Math.min(Math.max(pace.idleMs / 4, 10), 1000);
  }

  /** Watches `req` until its body is complete, if it has one. */
  watch(req: IncomingMessage, res: ServerResponse): void {
    const length = req.headers["content-length"];
    if (req.headers["transfer-encoding"] === undefined && (length === undefined || length === "0")) return;
    this.arrived.push(req, res);
    if (!this.sorting) {
      this.sorting = true;
      setImmediate(this.sortArrived);
    }
  }

  /** Watches the requests of the turn whose bodies are not complete yet (the clocks start here, a turn later). */
  private readonly sortArrived = (): void => {
    this.sorting = false;
    const now = this.now();
    const arrived = this.arrived;
    for (let i = 0; i < arrived.length; i += 2) {
      const req = arrived[i] as IncomingMessage;
      const socket = req.socket;
      if (req.complete || req.destroyed || !socket || socket.destroyed) continue;
      const bytes = socket.bytesRead;
      this.watched.set(req, { res: arrived[i + 1] as ServerResponse, bytes, progressAt: now, windowBytes: bytes, windowAt: now });
    }
    arrived.length = 0;
    if (this.watched.size > 0 && !this.timer) {
      this.lastLookAt = now;
      this.timer = setInterval(() => this.look(), this.intervalMs);
      this.timer.unref();
    }
  };

  /** Judges each watched body (the timer runs this every interval; a test runs it at the time it set). */
  look(): void {
    const now = this.now();
    // Our loop, not the client, kept this look from its time: what the client sent meanwhile is not read yet.
    const loopStalled = now - this.lastLookAt >= 2 * this.intervalMs;
    this.lastLookAt = now;
    for (const [req, seen] of this.watched) {
      const socket = req.socket;
      if (req.complete || req.destroyed || !socket || socket.destroyed) {
        this.watched.delete(req);
        continue;
      }
      const bytes = socket.bytesRead;
      if (loopStalled || notReading(req)) {
        // Our doing, not the client's: both rules start again from this look.
        Object.assign(seen, { bytes, progressAt: now, windowBytes: bytes, windowAt: now });
        continue;
      }
      if (bytes !== seen.bytes) {
        seen.bytes = bytes;
        seen.progressAt = now;
      }
      const refusal = this.judge(seen, bytes, now);
      if (refusal) {
        this.watched.delete(req);
        refuseInFlight(seen.res, refusal);
      }
    }
    if (this.watched.size === 0) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  /** The refusal a body has earned by now, if any; a window that passed starts the next. */
  private judge(seen: Watched, bytes: number, now: number): EdgeError | undefined {
    const { idleMs, minBytesPerSecond } = this.pace;
    if (now - seen.progressAt >= idleMs) return CoreErrors.requestBodyStalled(idleMs / 1000);
    if (minBytesPerSecond === 0 || now - seen.windowAt < idleMs) return undefined;
    if (bytes - seen.windowBytes < (minBytesPerSecond * idleMs) / 1000) return CoreErrors.requestBodyTooSlow(minBytesPerSecond, idleMs / 1000);
    seen.windowBytes = bytes;
    seen.windowAt = now;
    return undefined;
  }

  /** How many requests are watched now (their bodies were incomplete a turn after they arrived). */
  get watching(): number {
    return this.watched.size;
  }

  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.watched.clear();
    this.arrived.length = 0;
  }
}

/** The route is not taking the body in: its buffer is full, and Node stopped reading the socket until it drains. */
function notReading(req: IncomingMessage): boolean {
  return req.readableLength >= req.readableHighWaterMark;
}
