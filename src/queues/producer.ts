import { QueuesErrors } from "./errors.js";
import { QUEUES_LIMITS } from "./limits.js";
import { CONTENT_TYPES, type ContentType, type NewMessage, type QueueRecord, type QueuesStore } from "./store.js";

/** A content type as a producer names it (workerd's X-Msg-Fmt, the API's content_type); none is v8 for workerd. */
export function contentTypeOf(given: string | undefined, fallback: ContentType): ContentType {
  if (given === undefined || given === "") return fallback;
  const t = given.toLowerCase();
  if (!(CONTENT_TYPES as readonly string[]).includes(t)) throw QueuesErrors.contentType(given.slice(0, 40));
  return t as ContentType;
}

/** A delay in whole seconds, 0 to the hosted maximum; `given` absent is undefined (the queue's delivery_delay). */
export function delayOf(given: unknown): number | undefined {
  if (given === undefined || given === null || given === "") return undefined;
  const n = typeof given === "string" && /^\d+$/.test(given) ? Number(given) : given;
  if (typeof n !== "number" || !Number.isInteger(n) || n < 0 || n > QUEUES_LIMITS.delaySeconds) throw QueuesErrors.delay();
  return n;
}

/** Refuses a message or batch over the hosted limits, before anything is stored. */
export function checkMessages(messages: readonly NewMessage[]): void {
  if (messages.length === 0) throw QueuesErrors.emptyBatch();
  if (messages.length > QUEUES_LIMITS.batchMessages) throw QueuesErrors.batchTooLarge();
  let total = 0;
  for (const m of messages) {
    if (m.body.length > QUEUES_LIMITS.messageBytes) throw QueuesErrors.messageTooLarge();
    total += m.body.length;
  }
  if (messages.length > 1 && total > QUEUES_LIMITS.batchBytes) throw QueuesErrors.batchTooLarge();
}

/**
 * Sends to queues: checks the messages, stores them (all or none, within the backlog cap) and tells the local delivery loop, which
 * otherwise finds them at its next poll (other nodes do).
 */
export class Producer {
  constructor(
    private readonly store: QueuesStore,
    private readonly sent: (queueId: string) => void,
    /** The platform's cap on one queue's backlog (bytes of bodies): config.ts. */
    private readonly maxBacklogBytes: number,
  ) {}

  async send(queue: QueueRecord, messages: readonly NewMessage[]): Promise<void> {
    checkMessages(messages);
    await this.store.enqueue(queue.queue_id, messages, this.maxBacklogBytes);
    this.sent(queue.queue_id);
  }
}
