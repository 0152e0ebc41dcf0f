import type { Logger } from "../core/logger.js";
import type { LogWriter, NewLog } from "./log-store.js";

const MAX_BATCH = 1000;
/** How long a log may wait for company before it is written; one transaction per tick at most. */
const FLUSH_AFTER_MS = 10;

/**
 * Keeps log work off the request path. Building a log (reading usage, pricing, copying the fields) is deferred
 * until the answer has been sent: the proxy hands over a job, and all pending jobs run together once the event
 * loop is free (setImmediate). The entries they push are written by a timer in one transaction (sooner, on the
 * next turn, once a full batch is waiting), so under load many requests share a commit. The logs API and stop()
 * flush first, pending jobs included, so nothing is lost or unseen.
 */
export class LogQueue {
  private queue: NewLog[] = [];
  private jobs: (() => void)[] = [];
  private timer: NodeJS.Timeout | undefined;
  private immediate = false;

  constructor(
    private readonly writer: LogWriter,
    private readonly log: Logger,
  ) {}

  /** Runs `job` (which builds and pushes a log) after the current turn, or at the next flush if that comes first. */
  defer(job: () => void): void {
    if (this.jobs.push(job) === 1) setImmediate(this.runJobs);
  }

  private readonly runJobs = (): void => {
    const jobs = this.jobs;
    this.jobs = [];
    for (const job of jobs) {
      try {
        job();
      } catch (err) {
        this.log.error({ err }, "ai-gateway: building a log failed");
      }
    }
  };

  push(entry: NewLog): void {
    this.queue.push(entry);
    if (this.queue.length >= MAX_BATCH && !this.immediate) {
      this.immediate = true;
      setImmediate(() => this.flush());
    } else if (!this.timer) {
      this.timer = setTimeout(() => this.flush(), FLUSH_AFTER_MS);
    }
  }

  /** Writes everything queued now (also called on stop, so no accepted log is lost on shutdown). */
  flush(): void {
    if (this.jobs.length) this.runJobs();
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
