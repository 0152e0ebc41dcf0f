import type { Logger } from "../core/logger.js";
import type { QueuesStore } from "./store.js";

export interface RetentionSweepOptions {
  /** How often the sweep looks for expired messages (ms). */
  intervalMs: number;
  /** Messages one transaction deletes at most: one turn of the event loop never does more. */
  batch: number;
}

/**
 * Removes messages older than their queue's retention period, so they stop taking backlog room. Delivery does not
 * wait for it: lease() never hands out an expired message, so a late sweep only frees room later. Each turn deletes
 * at most `batch` messages in one transaction (counters included); while turns come back full the next one runs
 * after the event loop has served what waits (setImmediate), then the sweep sleeps `intervalMs`. On PostgreSQL
 * every node sweeps; the store makes that safe (each message deleted and counted once).
 */
export class RetentionSweep {
  private timer?: NodeJS.Timeout;
  private stopped = false;
  private running?: Promise<void>;

  constructor(
    private readonly store: QueuesStore,
    private readonly log: Logger,
    private readonly opts: RetentionSweepOptions,
    private readonly now: () => number = Date.now,
  ) {}

  start(): void {
    this.schedule(0);
  }

  /** Sweeps until a turn finds fewer than `batch` expired messages; resolves with how many were removed. */
  async sweepNow(): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await this.store.sweepExpired(this.now(), this.opts.batch);
      total += n;
      if (n < this.opts.batch || this.stopped) return total;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  private schedule(ms: number): void {
    this.timer = setTimeout(() => {
      this.running = this.sweepNow()
        .then((n) => {
          if (n > 0) this.log.info({ messages: n }, "expired queue messages removed");
        })
        .catch((err: unknown) => this.log.warn({ err }, "queue retention sweep failed; it runs again at the next interval"))
        .finally(() => {
          this.running = undefined;
          if (!this.stopped) this.schedule(this.opts.intervalMs);
        });
    }, ms);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }
}
