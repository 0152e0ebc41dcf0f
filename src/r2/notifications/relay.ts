import type { Logger } from "../../core/logger.js";
import type { R2Store } from "../store.js";
import type { OutboxMessage } from "./store.js";

/** Where the relay puts messages: the Queues area (wired by platform.ts). */
export interface NotificationQueues {
  /** The queue's name when the account has a queue of that id. */
  queueName(accountId: string, queueId: string): Promise<string | undefined>;
  /**
   * Sends JSON bodies to the account's queue, all or none; "gone" when the account has no such queue any more (the
   * messages are then dropped). Throws when they cannot be taken now (a full backlog, a database error): the relay
   * tries again later.
   */
  send(accountId: string, queueId: string, bodies: readonly string[]): Promise<"sent" | "gone">;
}

export interface RelayOptions {
  /** How often the outbox is looked at when nothing wakes the relay (other nodes' writes, leases that ran out). */
  pollMs: number;
  /** How long a leased message stays the relay's; past it, a message not moved (the process died) is moved again. */
  leaseMs: number;
}

/** Messages one pass leases, and most one send takes (the hosted sendBatch limits: 100 messages, 256 KB). */
const PASS_MESSAGES = 100;
const SEND_BYTES = 200 * 1024;

/**
 * Moves recorded event notifications (the outbox in R2's database) to their queues: lease a page, send each
 * queue's messages in order, then remove them. A crash after a send and before the removal sends them again when
 * the lease runs out: at-least-once, as the hosted platform promises.
 */
export class NotificationRelay {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;

  constructor(
    private readonly store: R2Store,
    private readonly queues: NotificationQueues,
    private readonly log: Logger,
    private readonly opts: RelayOptions,
  ) {}

  start(): void {
    this.wake();
  }

  /** Runs a pass now (or right after the one under way), then polls. */
  wake(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.running = this.drain().finally(() => {
      this.running = undefined;
      if (this.stopped) return;
      if (this.again) {
        this.again = false;
        setImmediate(() => this.wake());
      } else {
        this.timer = setTimeout(() => this.wake(), this.opts.pollMs);
        this.timer.unref();
      }
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }

  private async drain(): Promise<void> {
    try {
      for (;;) {
        const leased = await this.store.leaseNotifications(PASS_MESSAGES, this.opts.leaseMs, Date.now());
        if (leased.length === 0) return;
        await this.moveAll(leased);
        if (leased.length < PASS_MESSAGES || this.stopped) return;
      }
    } catch (err) {
      this.log.warn({ err }, "r2 event notifications: the outbox could not be read");
    }
  }

  private async moveAll(leased: OutboxMessage[]): Promise<void> {
    const byQueue = new Map<string, OutboxMessage[]>();
    for (const m of leased) {
      const k = `${m.accountId}/${m.queueId}`;
      const list = byQueue.get(k) ?? [];
      list.push(m);
      byQueue.set(k, list);
    }
    for (const messages of byQueue.values()) {
      for (const chunk of chunks(messages)) {
        const { accountId, queueId } = chunk[0]!;
        try {
          const sent = await this.queues.send(
            accountId,
            queueId,
            chunk.map((m) => m.body),
          );
          if (sent === "gone") this.log.info({ accountId, queueId, dropped: chunk.length }, "r2 event notifications: queue deleted, messages dropped");
          await this.store.ackNotifications(chunk.map((m) => m.id));
        } catch (err) {
          // Left leased: moved again once the lease ends. The queue's later messages wait too, to keep their order.
          this.log.warn({ err, accountId, queueId }, "r2 event notifications: queue did not take the messages; retrying later");
          break;
        }
      }
    }
  }
}

function* chunks(messages: OutboxMessage[]): Generator<OutboxMessage[]> {
  let chunk: OutboxMessage[] = [];
  let bytes = 0;
  for (const m of messages) {
    if (chunk.length > 0 && (chunk.length === PASS_MESSAGES || bytes + m.body.length > SEND_BYTES)) {
      yield chunk;
      chunk = [];
      bytes = 0;
    }
    chunk.push(m);
    bytes += m.body.length;
  }
  if (chunk.length > 0) yield chunk;
}
