import type { Logger } from "../core/logger.js";
import type { LogWriter, NewLog } from "./log-store.js";

const MAX_BATCH = 1000;
/** How long a log may wait for company before it is written; one transaction per tick at most. */
const FLUSH_AFTER_MS = 10;

/**
 * Keeps log writes off the request path: the proxy only pushes to an array. A timer writes everything
 * queued in one transaction (sooner, on the next turn of the event loop, once a full batch is waiting), so
 * under load many requests share a commit. The logs API and stop() flush first, so nothing is lost or unseen.
 */
export class LogQueue {
  private queue: NewLog[] = [];
  private timer: NodeJS.Timeout | undefined;
  private immediate = false;

  constructor(
    private readonly writer: LogWriter,
    private readonly log: Logger,
  ) {}

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
