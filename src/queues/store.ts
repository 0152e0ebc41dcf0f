/**
 * Queues' state: which queues each account has, their consumers, and the messages waiting in them. Messages are
 * rows (a body is at most 128 KB): they survive a restart, and on PostgreSQL every node sees the same ones. A
 * message being delivered is leased: it is invisible until the lease ends, so one node delivers it; when the
 * lease expires without an ack it is delivered again (at-least-once).
 *
 * Each queue row keeps its backlog (messages and body bytes) as counters, changed in the same transaction as every
 * write of its messages: a send checks the platform's cap against them without reading the messages.
 */

/** A queue as the v4 API shows it (the hosted fields; consumers are added by the routes). */
export interface QueueRecord {
  queue_id: string;
  queue_name: string;
  /** ISO 8601. */
  created_on: string;
  modified_on: string;
  settings: QueueSettings;
}

/** A queue's own settings, as the hosted API names them (seconds). */
export interface QueueSettings {
  /** The delay of a message sent without one of its own. */
  delivery_delay: number;
  /** While true nothing is delivered or pulled; sends are still taken. */
  delivery_paused: boolean;
  /** How long a message may wait: older ones are never delivered, and the retention sweep removes them. */
  message_retention_period: number;
}

export type ContentType = "json" | "text" | "bytes" | "v8";
export const CONTENT_TYPES: readonly ContentType[] = ["json", "text", "bytes", "v8"];

export interface ConsumerSettings {
  batch_size: number;
  max_retries: number;
  max_wait_time_ms: number;
  /** Seconds a retried message waits when the retry names no delay. */
  retry_delay: number;
  /** How long a pulled message stays leased (http_pull consumers). */
  visibility_timeout_ms?: number;
}

export interface ConsumerInput {
  type: "worker" | "http_pull";
  /** The Worker that consumes (type worker): a script of the same account. */
  script_name?: string;
  settings: ConsumerSettings;
  /** The name of the queue messages go to once their retries are spent (same account); none drops them. */
  dead_letter_queue?: string;
}

export interface ConsumerRecord extends ConsumerInput {
  consumer_id: string;
  queue_id: string;
  queue_name: string;
  created_on: string;
}

/** A worker consumer with what delivery needs: its account. */
export interface WorkerConsumer extends ConsumerRecord {
  account_id: string;
  script_name: string;
}

export interface NewMessage {
  body: Buffer;
  contentType: ContentType;
  /** Seconds before it may be delivered; absent, the queue's delivery_delay (read in the send's transaction). */
  delaySeconds?: number;
}

export interface LeasedMessage {
  id: string;
  body: Buffer;
  contentType: ContentType;
  /** How many times it has been delivered, this delivery included (1 the first time). */
  attempts: number;
  /** When it was sent (ms since the epoch). */
  timestampMs: number;
  /** Names this delivery: settling it needs it, so a delivery whose lease expired cannot settle a newer one. */
  leaseId: string;
}

/** What becomes of one leased message. */
export type Settlement =
  | { id: string; leaseId: string; action: "ack" }
  | { id: string; leaseId: string; action: "retry"; visibleAtMs: number }
  /** Moved to the end of the queue `toQueueId` (its dead letter queue) as a new message, attempts reset. */
  | { id: string; leaseId: string; action: "dead-letter"; toQueueId: string }
  | { id: string; leaseId: string; action: "drop" };

/** A queue's backlog counters: messages in it (leased ones included) and their bodies' bytes together. */
export interface Backlog {
  messages: number;
  bytes: number;
}

export interface QueueStats {
  /** Messages in the queue, leased ones included (the counter). */
  backlog: number;
  /** Their bodies' bytes together (the counter). */
  backlogBytes: number;
  /** When the oldest of them was sent (ms), if there is one. */
  oldestSentAtMs?: number;
  /** Messages deliverable now. */
  ready: number;
  /** When the longest-waiting deliverable message became deliverable (ms), if any is. */
  oldestReadyAtMs?: number;
}

export interface QueuesStore {
  // ---- queues ----
  /** Creates a queue (refused when the name is invalid or taken in the account); settings left out are the defaults. */
  createQueue(accountId: string, name: string, settings?: Partial<QueueSettings>): Promise<QueueRecord>;
  /** The account's queues, oldest first; with `names`, only those with one of them. */
  listQueues(accountId: string, opts?: { names?: readonly string[]; offset?: number; limit?: number }): Promise<{ queues: QueueRecord[]; total: number }>;
  getQueue(accountId: string, queueId: string): Promise<QueueRecord | undefined>;
  getQueueByName(accountId: string, name: string): Promise<QueueRecord | undefined>;
  /** Renames the queue and/or changes the settings given (the others stay); 404 when the account has no such queue. */
  updateQueue(accountId: string, queueId: string, change: { name?: string; settings?: Partial<QueueSettings> }): Promise<QueueRecord>;
  /** Deletes the queue with its consumers and messages (404 when the account has no such queue). */
  deleteQueue(accountId: string, queueId: string): Promise<void>;

  // ---- consumers (one per queue) ----
  addConsumer(accountId: string, queueId: string, input: ConsumerInput): Promise<ConsumerRecord>;
  updateConsumer(accountId: string, queueId: string, consumerId: string, input: ConsumerInput): Promise<ConsumerRecord>;
  listConsumers(accountId: string, queueId: string): Promise<ConsumerRecord[]>;
  deleteConsumer(accountId: string, queueId: string, consumerId: string): Promise<void>;
  /** Every worker consumer of every account: what the delivery loop serves. */
  workerConsumers(): Promise<WorkerConsumer[]>;
  /** The worker consumers that run the account's script `scriptName` (its workerd then needs the queue dispatcher). */
  consumersOfScript(accountId: string, scriptName: string): Promise<ConsumerRecord[]>;
  /** Removes the worker consumers that run the account's script `scriptName` (the Worker was deleted); returns how many. */
  deleteConsumersOfScript(accountId: string, scriptName: string): Promise<number>;

  // ---- messages (by queue id: callers have checked the account) ----
  /**
   * Adds the messages, all or none (404 when the queue is gone), when the queue's backlog stays within
   * `maxBacklogBytes` of bodies with them; otherwise refuses them all (Storage Limit Exceeded). The check and the
   * insert are one transaction: concurrent senders on any node never take the backlog past the cap.
   */
  enqueue(queueId: string, messages: readonly NewMessage[], maxBacklogBytes: number): Promise<void>;
  /** The queue's backlog counters (zero for a queue that is gone). */
  backlog(queueId: string): Promise<Backlog>;
  /** Every queue's backlog added up, and how many queues there are (the platform's metrics, read when scraped). */
  backlogTotals(): Promise<Backlog & { queues: number }>;
  stats(queueId: string, nowMs: number): Promise<QueueStats>;
  /**
   * Deletes every message of the account's queue, leased ones included (their settlements then change nothing), and
   * records when the purge started; returns how many.
   */
  purge(accountId: string, queueId: string, startedAtMs: number): Promise<number>;
  /** When the queue's last purge started (ms), or null if it was never purged (404 when the account has no such queue). */
  lastPurge(accountId: string, queueId: string): Promise<number | null>;
  /**
   * Leases up to `max` deliverable messages, oldest first: each becomes invisible until `nowMs + leaseMs` and its
   * attempts grow by one. Two callers never lease the same message while a lease holds. Nothing of a paused queue
   * is deliverable, nor a message older than the queue's retention period at `nowMs` (the sweep may not have run).
   */
  lease(queueId: string, max: number, leaseMs: number, nowMs: number): Promise<LeasedMessage[]>;
  /**
   * Applies the settlements whose lease still holds, in one transaction; returns how many did. A dead-letter move
   * goes past the dead letter queue's cap: it takes no room the platform had not already given the message.
   */
  settle(queueId: string, settlements: readonly Settlement[]): Promise<number>;
  /**
   * Deletes up to `max` messages, of any queues, older than their queue's retention period at `nowMs` (leased ones
   * too: their settlements then change nothing), lowering the queues' counters in the same transaction; returns
   * how many. Several nodes may sweep at once: each message is deleted and counted once.
   */
  sweepExpired(nowMs: number, max: number): Promise<number>;
}
