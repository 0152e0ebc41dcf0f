import { z } from "zod";
import type { Logger } from "../core/logger.js";
import { parseWith } from "../core/http/validate.js";
import { retire } from "./dead-letter.js";
import { QueuesCodes, QueuesErrors } from "./errors.js";
import { QUEUES_LIMITS } from "./limits.js";
import { delayOf } from "./producer.js";
import type { ConsumerRecord, QueueRecord, QueuesStore, Settlement } from "./store.js";

const pullBody = z.object({
  batch_size: z.number().int().min(1).max(QUEUES_LIMITS.pullMessages).optional(),
  visibility_timeout_ms: z.number().int().min(1).max(QUEUES_LIMITS.visibilityTimeoutMs).optional(),
});
const leaseRef = z.object({ lease_id: z.string().max(200) });
const ackBody = z.object({
  acks: z.array(leaseRef).max(QUEUES_LIMITS.pullMessages).default([]),
  retries: z
    .array(leaseRef.extend({ delay_seconds: z.unknown().optional() }))
    .max(QUEUES_LIMITS.pullMessages)
    .default([]),
});

/** A pulled message's lease_id: its id and its lease, so an ack names both (an expired lease settles nothing). */
const leaseIdOf = (id: string, lease: string) => `${id}.${lease}`;
const splitLeaseId = (leaseId: string) => {
  const [id, lease] = leaseId.split(".");
  return id && lease ? { id, leaseId: lease } : undefined;
};

/**
 * HTTP pull consumers (`.../messages/pull` and `.../ack`): a queue whose consumer is of type http_pull hands out
 * leased messages to whoever pulls with the account's credentials; an ack deletes them, a retry (or a lease that
 * runs out) makes them visible again, and once their retries are spent they go to the dead letter queue.
 */
export class PullConsumers {
  constructor(
    private readonly store: QueuesStore,
    private readonly log: Logger,
    private readonly settled: (queueId: string) => void,
  ) {}

  private async consumerOf(accountId: string, queue: QueueRecord): Promise<ConsumerRecord> {
    const c = (await this.store.listConsumers(accountId, queue.queue_id)).find((x) => x.type === "http_pull");
    if (!c) throw QueuesErrors.noPullConsumer();
    return c;
  }

  async pull(accountId: string, queue: QueueRecord, body: unknown) {
    const b = parseWith(pullBody, body, QueuesCodes.badRequest);
    const c = await this.consumerOf(accountId, queue);
    const leased = await this.store.lease(
      queue.queue_id,
      b.batch_size ?? c.settings.batch_size,
      b.visibility_timeout_ms ?? c.settings.visibility_timeout_ms ?? 30_000,
      Date.now(),
    );
    const deliveries = c.settings.max_retries + 1;
    const spent = leased.filter((m) => m.attempts > deliveries);
    if (spent.length > 0) await this.store.settle(queue.queue_id, await retire(this.store, this.log, accountId, c, spent));
    const messages = leased
      .filter((m) => m.attempts <= deliveries)
      .map((m) => ({
        id: m.id,
        body: m.contentType === "json" || m.contentType === "text" ? m.body.toString("utf8") : m.body.toString("base64"),
        attempts: m.attempts,
        timestamp_ms: m.timestampMs,
        lease_id: leaseIdOf(m.id, m.leaseId),
        metadata: { "CF-Content-Type": m.contentType },
      }));
    const stats = await this.store.stats(queue.queue_id, Date.now());
    return { messages, message_backlog_count: stats.backlog };
  }

  async ack(accountId: string, queue: QueueRecord, body: unknown) {
    const b = parseWith(ackBody, body, QueuesCodes.badRequest);
    await this.consumerOf(accountId, queue);
    const warnings: string[] = [];
    const settlements: Settlement[] = [];
    const now = Date.now();
    for (const a of b.acks) {
      const ref = splitLeaseId(a.lease_id);
      if (ref) settlements.push({ ...ref, action: "ack" });
      else warnings.push(`lease_id ${a.lease_id.slice(0, 80)} is not one this queue handed out`);
    }
    let retries = 0;
    for (const r of b.retries) {
      const ref = splitLeaseId(r.lease_id);
      if (!ref) {
        warnings.push(`lease_id ${r.lease_id.slice(0, 80)} is not one this queue handed out`);
        continue;
      }
      retries++;
      settlements.push({ ...ref, action: "retry", visibleAtMs: now + (delayOf(r.delay_seconds) ?? 0) * 1000 });
    }
    const done = await this.store.settle(queue.queue_id, settlements);
    if (done < settlements.length) warnings.push(`${settlements.length - done} leases had expired or were unknown: those messages were not changed`);
    if (retries > 0) this.settled(queue.queue_id);
    return { ackCount: settlements.length - retries, retryCount: retries, warnings };
  }
}
