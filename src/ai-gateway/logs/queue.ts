import { unreachableDependency } from "../../core/errors/dependency.js";
import type { Logger } from "../../core/logger.js";
import type { LogStore } from "./store.js";
import type { LogCounts } from "./counts.js";
import type { LogDraft } from "./store.js";

const MAX_BATCH = 1000;
/**
 * How long a log may wait for company before it is written; one batch write per tick at most. Every batch costs
 * a commit and, on SQLite, a hand-over to the writer thread and back: at 10 ms a gateway serving 1,000-8,000
 * requests a second wrote batches of 10-80 logs, and measured CPU per logged request went down by 15-80 µs
 * (whole process, 8 clients) with 50; with 100, half as many batches are packed, handed to the writer thread and
 * committed (35-42 µs less per request at 32 clients in two loaded A/B runs, not resolved by two later ones:
 * docs/benchmarks.md). Nothing reads a log before it is written: the logs API flushes first.
 */
export const FLUSH_AFTER_MS = 100;
/**
 * The wait once a log of a gateway with a limit is among them: the batch's answer brings that gateway's count to
 * LogCounts, by which the proxy knows a STOP_INSERTING gateway is full; the sooner, the fewer requests are
 * promised a log (gw-aig-log-id) that the store then drops.
 */
export const LIMITED_FLUSH_AFTER_MS = 10;
/**
 * The most logs, and bytes of their bodies, waiting to be written. Reached only while the store cannot be written
 * (PostgreSQL unreachable): logs beyond it are dropped, and counted in a warning.
 */
export const MAX_WAITING_LOGS = 50_000;
export const MAX_WAITING_BYTES = 256 * 1024 * 1024;
/** Pauses between attempts while the store is unreachable: the first, and the longest. */
const RETRY_MS = { first: 250, max: 5_000 };

const bodyBytes = (l: LogDraft) => (l.request_body?.length ?? 0) + (l.response_body?.length ?? 0);

/**
 * Keeps log work off the request path. The proxy hands over a log's draft once the answer is sent (logs/draft.ts:
 * the facts as they are); a timer writes everything waiting as one batch (sooner, on the next turn, once a full
 * batch is waiting), and the store builds the records (usage, cost) where it writes them: the SQLite store on its
 * writer thread. So a request costs its own path nothing but a push, and under load many requests share a commit.
 * The logs API and stop() flush first, so nothing is lost or unseen.
 *
 * When the store is unreachable (PostgreSQL down: `unreachableDependency`), a batch is kept and written again, with
 * growing pauses, until it goes through; meanwhile new logs wait behind it, up to MAX_WAITING_LOGS and
 * MAX_WAITING_BYTES, and what comes beyond that is dropped. Any other failure drops the batch (it would fail again).
 */
export class LogQueue {
  /** Logs not yet written, oldest first (a batch that could not be written goes back to the front). */
  private waiting: LogDraft[] = [];
  private waitingBytes = 0;
  /** Logs of the batch being written (taken from `waiting`, not yet stored or given up). */
  private writing = 0;
  private timer: NodeJS.Timeout | undefined;
  /** When `timer` fires (Date.now() ms): a log of a limited gateway brings it forward. */
  private timerDue = 0;
  private immediate = false;
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

  push(entry: LogDraft): void {
    const bytes = bodyBytes(entry);
    if (this.waiting.length >= MAX_WAITING_LOGS || this.waitingBytes + bytes > MAX_WAITING_BYTES) {
      if (this.dropped++ === 0) this.log.warn({ waiting: this.waiting.length }, "ai-gateway: too many logs wait for the store; dropping new ones");
      return;
    }
    this.waiting.push(entry);
    this.waitingBytes += bytes;
    this.schedule(entry.limit !== null);
  }

  /** How many logs are not written yet: those waiting, and those of the batch being written. */
  get pending(): number {
    return this.waiting.length + this.writing;
  }

  /** `limited`: the log just queued belongs to a gateway with a limit (written within LIMITED_FLUSH_AFTER_MS). */
  private schedule(limited: boolean): void {
    // While the store is unreachable, logs wait (bounded) for the retry's timer.
    if (this.retryTimer) return;
    if (this.waiting.length >= MAX_BATCH) {
      if (!this.immediate) {
        this.immediate = true;
        setImmediate(() => void this.drain(false));
      }
      return;
    }
    const wait = limited ? LIMITED_FLUSH_AFTER_MS : FLUSH_AFTER_MS;
    const due = Date.now() + wait;
    if (this.timer && this.timerDue <= due) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.drain(false), wait);
    this.timerDue = due;
  }

  /**
   * Writes everything waiting now; resolves once it (and every earlier write) is stored, or the store was found
   * unreachable (the logs then wait for the next attempt). Called by the logs API before it reads and on stop, so
   * no accepted log is unseen while the store works. Never rejects.
   */
  flush(): Promise<void> {
    return this.drain(true);
  }

  /** Writes what waits, unless `explicit` is false and a retry is due later. */
  private drain(explicit: boolean): Promise<void> {
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
      this.writing = batch.length;
      try {
        this.counts.update(await this.store.appendDrafts(batch), mark);
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
      } finally {
        this.writing = 0;
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
