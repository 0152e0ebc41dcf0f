import type { Logger } from "../core/logger.js";
import type { LogWriter, NewLog } from "./log-store.js";

const MAX_BATCH = 1000;
/** How long a log may wait for company before it is built and written; one transaction per tick at most. */
const FLUSH_AFTER_MS = 10;

/**
 * Keeps log work off the request path. The proxy hands over a job once the answer is sent; the jobs (reading
 * usage, pricing, copying the fields) run together with the SQLite write of the entries they build: a timer runs
 * everything pending in one go and one transaction (sooner, on the next turn, once a full batch is waiting). So a
 * request costs its own path nothing but a push, and under load many requests share a commit. The logs API and
 * stop() flush first, pending jobs included, so nothing is lost or unseen.
 */
export class LogQueue {
  private queue: NewLog[] = [];
  private jobs: (() => void)[] = [];
  private timer: NodeJS.Timeout | undefined;
  private immediate = false;
  private flushing = false;

  constructor(
    private readonly writer: LogWriter,
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
        setImmediate(() => this.flush());
      }
    } else if (!this.timer) {
      this.timer = setTimeout(() => this.flush(), FLUSH_AFTER_MS);
    }
  }

  /** Builds and writes everything pending now (also called on stop, so no accepted log is lost on shutdown). */
  flush(): void {
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
    while (this.queue.length) {
      const batch = this.queue.length > MAX_BATCH ? this.queue.splice(0, MAX_BATCH) : this.queue.splice(0);
      try {
        this.writer.writeBatch(batch);
      } catch (err) {
        this.log.error({ err, dropped: batch.length }, "ai-gateway: writing logs failed");
      }
    }
  }
}
