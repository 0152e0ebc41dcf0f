import type { Logger } from "../core/logger.js";
import type { ConsumerRecord, LeasedMessage, QueuesStore, Settlement } from "./store.js";

/**
 * The settlements of messages whose retries are spent: moved to the consumer's dead letter queue (looked up by
 * name in the consumer's own account), or dropped with a log line when it has none or it does not exist.
 */
export async function retire(
  store: QueuesStore,
  log: Logger,
  accountId: string,
  consumer: ConsumerRecord,
  messages: readonly LeasedMessage[],
): Promise<Settlement[]> {
  if (messages.length === 0) return [];
  const dlq = consumer.dead_letter_queue ? await store.getQueueByName(accountId, consumer.dead_letter_queue) : undefined;
  const where = { queue: consumer.queue_name, script: consumer.script_name, messages: messages.map((m) => m.id) };
  if (dlq) {
    log.info({ ...where, dead_letter_queue: dlq.queue_name }, "queue messages moved to the dead letter queue after their retries");
    return messages.map((m) => ({ id: m.id, leaseId: m.leaseId, action: "dead-letter", toQueueId: dlq.queue_id }));
  }
  log.warn(
    { ...where, dead_letter_queue: consumer.dead_letter_queue },
    consumer.dead_letter_queue
      ? "queue messages dropped after their retries: the dead letter queue does not exist"
      : "queue messages dropped after their retries: the consumer has no dead letter queue",
  );
  return messages.map((m) => ({ id: m.id, leaseId: m.leaseId, action: "drop" }));
}
