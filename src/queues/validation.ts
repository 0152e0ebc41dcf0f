import { QueuesErrors } from "./errors.js";
import { QUEUES_LIMITS } from "./limits.js";
import type { ConsumerInput, ConsumerRecord, QueueRecord } from "./store.js";

const NAME = new RegExp(`^[a-z0-9](?:[a-z0-9-]{0,${QUEUES_LIMITS.nameChars - 2}}[a-z0-9])?$`);

/** Refuses a queue name the hosted API would refuse. */
export function checkQueueName(name: string): void {
  if (!NAME.test(name)) throw QueuesErrors.nameInvalid();
}

/** The row of a queue as both stores keep it (times as ms). */
export interface QueueRow {
  id: string;
  name: string;
  created_on: number | string;
  modified_on: number | string;
  delivery_delay: number;
  /** SQLite keeps 0 or 1, PostgreSQL a boolean. */
  delivery_paused: number | boolean;
  message_retention_period: number;
}

export const queueRecord = (r: QueueRow): QueueRecord => ({
  queue_id: r.id,
  queue_name: r.name,
  created_on: new Date(Number(r.created_on)).toISOString(),
  modified_on: new Date(Number(r.modified_on)).toISOString(),
  settings: {
    delivery_delay: Number(r.delivery_delay),
    delivery_paused: Boolean(r.delivery_paused),
    message_retention_period: Number(r.message_retention_period),
  },
});

/** The row of a consumer as both stores keep it (settings as JSON text), joined with its queue's name and account. */
export interface ConsumerRow {
  id: string;
  queue_id: string;
  queue_name: string;
  account_id: string;
  type: string;
  script_name: string | null;
  settings: string;
  dead_letter_queue: string | null;
  created_on: number | string;
}

export const consumerRecord = (r: ConsumerRow): ConsumerRecord => ({
  consumer_id: r.id,
  queue_id: r.queue_id,
  queue_name: r.queue_name,
  type: r.type as ConsumerInput["type"],
  ...(r.script_name !== null ? { script_name: r.script_name } : {}),
  settings: JSON.parse(r.settings) as ConsumerInput["settings"],
  ...(r.dead_letter_queue !== null ? { dead_letter_queue: r.dead_letter_queue } : {}),
  created_on: new Date(Number(r.created_on)).toISOString(),
});

/** The columns a consumer is written with, in order, from its input. */
export const consumerColumns = (input: ConsumerInput) => [
  input.type,
  input.script_name ?? null,
  JSON.stringify(input.settings),
  input.dead_letter_queue ?? null,
];
