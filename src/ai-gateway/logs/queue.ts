import { unreachableDependency } from "../../core/errors/dependency.js";
import type { Logger } from "../../core/logger.js";
import type { LogStore, NewLog } from "../store.js";
import type { LogCounts } from "./counts.js";

const MAX_BATCH = 1000;
/** How long a log may wait for company before it is built and written; one batch write per tick at most. */
const FLUSH_AFTER_MS = 10;
/**
 * The most logs, and bytes of their bodies, waiting to be written. Reached only while the store cannot be written
 * (PostgreSQL unreachable): logs beyond it are dropped, and counted in a warning.
 */
export const MAX_WAITING_LOGS = 50_000;
export const MAX_WAITING_BYTES = 256 * 1024 * 1024;
/** Pauses between attempts while the store is unreachable: the first, and the longest. */
const RETRY_MS = { first: 250, max: 5_000 };

const bodyBytes = (l: NewLog) => (l.request_body?.length ?? 0) + (l.response_body?.length ?? 0);

/**
 * Keeps log work off the request path. The proxy hands over a job once the answer is sent; the jobs (reading
 * usage, pricing, copying the fields) run together with the store write of the entries they build: a timer runs
 * everything pending in one go and writes it as one batch (sooner, on the next turn, once a full batch is
 * waiting). So a request costs its own path nothing but a push, and under load many requests share a commit. The
 * logs API and stop() flush first, pending jobs included, so nothing is lost or unseen.
 *
 * When the store is unreachable (PostgreSQL down: `unreachableDependency`), a batch is kept and written again, with
 * growing pauses, until it goes through; meanwhile new logs wait behind it, up to MAX_WAITING_LOGS and
 * MAX_WAITING_BYTES, and what comes beyond that is dropped. Any other failure drops the batch (it would fail again).
 */
export class LogQueue {
  /** Built logs not yet written, oldest first (a batch that could not be written goes back to the front). */
  private waiting: NewLog[] = [];
  private waitingBytes = 0;
  private jobs: (() => void)[] = [];
  private timer: NodeJS.Timeout | undefined;
  private immediate = false;
  private flushing = false;
  /** The writes in flight, in order; a flush resolves once everything before it is written (or found unwritable). */
  private written: Promise<void> = Promise.resolve();
  /** While the store is unreachable: when to try again, and how many attempts failed in a row. */
  private retryTimer: NodeJS.Timeout | undefined;
  private failures = 0;
  private dropped = 0;
  private closed = false;

  constructor(
    private readonly store: LogStore,
    private readonly counts: LogCounts,
    private readonly log: Logger,
  ) {}

  /** Runs `job` (which builds a log and pushes it) at the next flush. */
  defer(job: () => void): void {
    this.jobs.push(job);
    this.schedule();
  }

  push(entry: NewLog): void {
    const bytes = bodyBytes(entry);
    if (this.waiting.length >= MAX_WAITING_LOGS || this.waitingBytes + bytes > MAX_WAITING_BYTES) {
      if (this.dropped++ === 0) this.log.warn({ waiting: this.waiting.length }, "ai-gateway: too many logs wait for the store; dropping new ones");
      return;
    }
    this.waiting.push(entry);
    this.waitingBytes += bytes;
    this.schedule();
  }

  /** How many logs wait to be written (built or not). */
  get pending(): number {
    return this.waiting.length + this.jobs.length;
  }

  private schedule(): void {
    if (this.flushing) return;
    // While the store is unreachable, jobs are still built on time (their logs then wait, bounded), but not written.
    const backlog = this.retryTimer ? this.jobs.length : this.waiting.length + this.jobs.length;
    if (backlog >= MAX_BATCH) {
      if (!this.immediate) {
        this.immediate = true;
        setImmediate(() => void this.drain(false));
      }
    } else if (!this.timer) {
      this.timer = setTimeout(() => void this.drain(false), FLUSH_AFTER_MS);
    }
  }

  /**
   * Builds everything pending now and writes it; resolves once it (and every earlier write) is stored, or the
   * store was found unreachable (the logs then wait for the next attempt). Called by the logs API before it reads
   * and on stop, so no accepted log is unseen while the store works. Never rejects.
   */
  flush(): Promise<void> {
    return this.drain(true);
  }

  /** Builds the pending jobs, and writes what waits unless `explicit` is false and a retry is due later. */
  private drain(explicit: boolean): Promise<void> {
    this.flushing = true;
    try {
      const jobs = this.jobs;
      this.jobs = [];
      for (const job of jobs) {
        try {
          job();
        } catch (err) {
          this.log.error({ err }, "ai-gateway: building a log failed");
        }
      }
    } finally {
      this.flushing = false;
    }
    clearTimeout(this.timer);
    this.timer = undefined;
    this.immediate = false;
    if (this.waiting.length && (explicit || !this.retryTimer)) this.written = this.written.then(() => this.writeWaiting());
    return this.written;
  }

  /** Writes what waits, a batch at a time, until it is all written or the store is unreachable. */
  private async writeWaiting(): Promise<void> {
    while (this.waiting.length) {
      const batch = this.waiting.splice(0, MAX_BATCH);
      const bytes = batch.reduce((sum, l) => sum + bodyBytes(l), 0);
      this.waitingBytes -= bytes;
      const mark = this.counts.mark();
      try {
        this.counts.update(await this.store.append(batch), mark);
        if (this.failures > 0 || this.dropped > 0) this.log.info({ dropped: this.dropped }, "ai-gateway: logs are written again");
        this.failures = 0;
        this.dropped = 0;
      } catch (err) {
        if (!unreachableDependency(err)) {
          this.log.error({ err, dropped: batch.length }, "ai-gateway: writing logs failed");
          continue;
        }
        // Back to the front, in order; the next attempt after a pause (a flush asked for meanwhile tries at once).
        this.waiting.unshift(...batch);
        this.waitingBytes += bytes;
        if (this.failures++ === 0) this.log.warn({ err, waiting: this.waiting.length }, "ai-gateway: the log store is unreachable; logs wait in memory");
        this.retryLater();
        return;
      }
    }
  }

  private retryLater(): void {
    if (this.closed || this.retryTimer) return;
    const pause = Math.min(RETRY_MS.max, RETRY_MS.first * 2 ** Math.min(this.failures - 1, 10));
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      void this.drain(true);
    }, pause);
    this.retryTimer.unref();
  }

  /** Writes what is pending (one attempt) and stops retrying; says how many logs are lost when that failed. */
  async close(): Promise<void> {
    await this.flush();
    this.closed = true;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    if (this.waiting.length) this.log.warn({ lost: this.waiting.length }, "ai-gateway: stopping while the log store is unreachable; these logs are lost");
  }
}
