import type { Logger } from "../core/logger.js";
import { retire } from "./dead-letter.js";
import type { LeasedMessage, QueuesStore, Settlement, WorkerConsumer } from "./store.js";

/** What a consumer's queue() handler did with a batch: workerd's own result of a queue event. */
export interface QueueOutcome {
  /** "ok" when the handler (and its waitUntil promises) finished without throwing. */
  outcome: string;
  ackAll: boolean;
  retryBatch: { retry: boolean; delaySeconds?: number };
  explicitAcks: string[];
  retryMessages: { msgId: string; delaySeconds?: number }[];
}

/** How the platform runs a consumer's queue() handler (the workers area does it, on the script's workerd). */
export interface QueueDeliverer {
  /** Whether `consumer`'s script runs here, in the consumer's account, with a queue() handler. */
  ready(consumer: WorkerConsumer): boolean;
  /** Runs queue() on `messages`; rejects when it could not be run or gave no answer in `timeoutMs`. */
  deliver(consumer: WorkerConsumer, messages: readonly LeasedMessage[], timeoutMs: number): Promise<QueueOutcome>;
}

export interface DeliveryOptions {
  /** How long a delivered batch is leased: the handler's time limit, after which its messages are delivered again. */
  leaseMs: number;
  /** How often queues are looked at when nothing wakes the loop (sends through another node, delays running out). */
  pollMs: number;
}

/**
 * Delivers queued messages to their consumers' queue() handlers: a batch goes out once it is full (batch_size) or
 * its oldest message has waited max_wait_time_ms. The batch's messages are leased first (store.lease), so on
 * several nodes each message goes to one of them; a node that dies mid-batch leaves leases that expire, and the
 * messages are delivered again (at-least-once). A message whose deliveries reach max_retries + 1 without an ack
 * goes to the consumer's dead letter queue, or is dropped with a log line when it has none.
 */
export class QueueDelivery {
  private timer?: NodeJS.Timeout;
  private running = false;
  private again = false;
  private stopped = true;
  /** Consumers with a batch out (one at a time per consumer and node). */
  private readonly busy = new Set<string>();
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly store: QueuesStore,
    private readonly deliverer: QueueDeliverer,
    private readonly log: Logger,
    private readonly opts: DeliveryOptions,
  ) {}

  start(): void {
    this.stopped = false;
    this.wake();
  }

  /** Looks at every queue now (a message was sent, a batch settled), and again after pollMs. */
  wake(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.running = true;
    void this.tick()
      .catch((err: unknown) => {
        this.log.warn({ err }, "queue delivery poll failed");
        return this.opts.pollMs;
      })
      .then((nextMs) => {
        this.running = false;
        if (this.stopped) return;
        if (this.again) {
          this.again = false;
          this.wake();
        } else this.later(nextMs);
      });
  }

  private later(ms: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.wake(), Math.max(10, ms));
    this.timer.unref();
  }

  /** Starts the batches that are due; returns when the loop should look again (ms). */
  private async tick(): Promise<number> {
    let nextMs = this.opts.pollMs;
    for (const c of await this.store.workerConsumers()) {
      if (this.stopped) break;
      if (this.busy.has(c.consumer_id) || !this.deliverer.ready(c)) continue;
      const now = Date.now();
      const stats = await this.store.stats(c.queue_id, now);
      if (stats.ready === 0) continue;
      const dueIn = stats.oldestReadyAtMs! + c.settings.max_wait_time_ms - now;
      if (stats.ready < c.settings.batch_size && dueIn > 0) {
        nextMs = Math.min(nextMs, dueIn);
        continue;
      }
      this.busy.add(c.consumer_id);
      const run: Promise<void> = this.deliverBatch(c)
        .catch((err: unknown) => this.log.warn({ err, queue: c.queue_name, script: c.script_name }, "queue batch delivery failed"))
        .finally(() => {
          this.busy.delete(c.consumer_id);
          this.inFlight.delete(run);
          this.wake();
        });
      this.inFlight.add(run);
    }
    return nextMs;
  }

  private async deliverBatch(c: WorkerConsumer): Promise<void> {
    const messages = await this.store.lease(c.queue_id, c.settings.batch_size, this.opts.leaseMs, Date.now());
    if (messages.length === 0) return;
    const deliveries = c.settings.max_retries + 1;
    // Delivered that many times already without an ack (their leases ran out): they are spent.
    const spent = messages.filter((m) => m.attempts > deliveries);
    const batch = messages.filter((m) => m.attempts <= deliveries);
    let outcome: QueueOutcome | undefined;
    if (batch.length > 0) {
      try {
        outcome = await this.deliverer.deliver(c, batch, this.opts.leaseMs);
      } catch (err) {
        this.log.warn({ err: (err as Error).message, queue: c.queue_name, script: c.script_name }, "queue() could not be run; the batch is retried");
      }
    }
    if (outcome && outcome.outcome !== "ok") {
      this.log.info(
        { queue: c.queue_name, script: c.script_name, outcome: outcome.outcome, messages: batch.length },
        "queue() did not complete; its batch is retried",
      );
    }
    const now = Date.now();
    const settlements: Settlement[] = [];
    const giveUp: LeasedMessage[] = [...spent];
    for (const m of batch) {
      const decided = decide(m, outcome);
      if (decided.action === "ack") settlements.push({ id: m.id, leaseId: m.leaseId, action: "ack" });
      else if (m.attempts >= deliveries) giveUp.push(m);
      else {
        const delay = decided.delaySeconds ?? c.settings.retry_delay;
        settlements.push({ id: m.id, leaseId: m.leaseId, action: "retry", visibleAtMs: now + delay * 1000 });
      }
    }
    settlements.push(...(await retire(this.store, this.log, c.account_id, c, giveUp)));
    await this.store.settle(c.queue_id, settlements);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await Promise.allSettled([...this.inFlight]);
  }
}

/**
 * What becomes of one message after queue() ran, as on the hosted platform: its own ack() or retry() wins (retry
 * over ack, as workerd ignores an ack after a retry); then retryAll(); then the handler's result: returning
 * acknowledges the batch (ackAll or not), throwing retries every message not acknowledged on its own.
 */
export function decide(m: LeasedMessage, outcome: QueueOutcome | undefined): { action: "ack" } | { action: "retry"; delaySeconds?: number } {
  if (!outcome) return { action: "retry" };
  const retry = outcome.retryMessages.find((r) => r.msgId === m.id);
  if (retry) return { action: "retry", delaySeconds: retry.delaySeconds };
  if (outcome.explicitAcks.includes(m.id)) return { action: "ack" };
  if (outcome.retryBatch.retry) return { action: "retry", delaySeconds: outcome.retryBatch.delaySeconds };
  return outcome.outcome === "ok" ? { action: "ack" } : { action: "retry" };
}
