import type { Logger } from "../../core/logger.js";
import type { LogStore, NewLog } from "../store.js";
import type { LogCounts } from "./counts.js";

const MAX_BATCH = 1000;
/** How long a log may wait for company before it is built and written; one batch write per tick at most. */
const FLUSH_AFTER_MS = 10;

/**
 * Keeps log work off the request path. The proxy hands over a job once the answer is sent; the jobs (reading
 * usage, pricing, copying the fields) run together with the store write of the entries they build: a timer runs
 * everything pending in one go and writes it as one batch (sooner, on the next turn, once a full batch is
 * waiting). So a request costs its own path nothing but a push, and under load many requests share a commit. The
 * logs API and stop() flush first, pending jobs included, so nothing is lost or unseen.
 */
export class LogQueue {
  private queue: NewLog[] = [];
  private jobs: (() => void)[] = [];
  private timer: NodeJS.Timeout | undefined;
  private immediate = false;
  private flushing = false;
  /** The writes in flight, in order; a flush resolves once everything before it is written. */
  private written: Promise<void> = Promise.resolve();

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
    this.queue.push(entry);
    this.schedule();
  }

  private schedule(): void {
    if (this.flushing) return;
    if (this.queue.length + this.jobs.length >= MAX_BATCH) {
      if (!this.immediate) {
        this.immediate = true;
        setImmediate(() => void this.flush());
      }
    } else if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), FLUSH_AFTER_MS);
    }
  }

  /**
   * Builds everything pending now and writes it; resolves once it (and every earlier write) is stored. Called by
   * the logs API before it reads and on stop, so no accepted log is lost or unseen. Never rejects: a failed write
   * is logged with how many logs it dropped.
   */
  flush(): Promise<void> {
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
    const batches: NewLog[][] = [];
    while (this.queue.length) batches.push(this.queue.length > MAX_BATCH ? this.queue.splice(0, MAX_BATCH) : this.queue.splice(0));
    if (batches.length) this.written = this.written.then(() => this.write(batches));
    return this.written;
  }

  private async write(batches: readonly NewLog[][]): Promise<void> {
    for (const batch of batches) {
      const mark = this.counts.mark();
      try {
        this.counts.update(await this.store.append(batch), mark);
      } catch (err) {
        this.log.error({ err, dropped: batch.length }, "ai-gateway: writing logs failed");
      }
    }
  }
}
