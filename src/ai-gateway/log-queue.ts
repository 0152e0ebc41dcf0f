import type { Logger } from "../core/logger.js";
import type { LogWriter, NewLog } from "./log-store.js";

const MAX_BATCH = 1000;

/**
 * Keeps log writes off the request path: the proxy only pushes to an array; a flush scheduled with
 * setImmediate writes everything queued in one transaction, after the responses of this turn are sent.
 */
export class LogQueue {
  private queue: NewLog[] = [];
  private scheduled = false;

  constructor(
    private readonly writer: LogWriter,
    private readonly log: Logger,
  ) {}

  push(entry: NewLog): void {
    this.queue.push(entry);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
  }

  /** Writes everything queued now (also called on stop, so no accepted log is lost on shutdown). */
  flush(): void {
    this.scheduled = false;
    while (this.queue.length) {
      const batch = this.queue.length > MAX_BATCH ? this.queue.splice(0, MAX_BATCH) : this.queue.splice(0);
      try {
        this.writer.writeBatch(batch);
      } catch (err) {
        this.log.error({ err, dropped: batch.length }, "ai-gateway: writing logs failed");
      }
    }
  }

  get pending(): number {
    return this.queue.length;
  }
}
