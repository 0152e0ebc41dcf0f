/** The hosted Queues limits this platform keeps (developers.cloudflare.com/queues/platform/limits), as data. */
export const QUEUES_LIMITS = {
  /** A queue name: lowercase letters, digits and "-", as the hosted API accepts. */
  nameChars: 63,
  /** One message's body, serialized. */
  messageBytes: 128 * 1024,
  /** Messages in one sendBatch or one batch delivered to a consumer. */
  batchMessages: 100,
  /** The bodies of one sendBatch together. */
  batchBytes: 256 * 1024,
  /** The longest delivery delay of a message, a retry or a queue (its delivery_delay). */
  delaySeconds: 12 * 60 * 60,
  /** A queue's message_retention_period: 60 s to 14 days (the bounds wrangler 3 checks too). */
  retentionMinSeconds: 60,
  retentionMaxSeconds: 14 * 24 * 60 * 60,
  /** The longest a consumer waits to fill a batch. */
  batchTimeoutSeconds: 60,
  /** The most times a message is retried before it is dead-lettered (or dropped). */
  maxRetries: 100,
  /** Queues an account may have. */
  queuesPerAccount: 10_000,
  /** Messages one pull may lease. */
  pullMessages: 100,
  /**
   * The bytes of message bodies one queue may hold, by default (hosted: 25 GB, 1 GB being 10^9 bytes): the
   * platform-wide `--queue-backlog-max-bytes` changes it (config.ts).
   */
  backlogBytes: 25_000_000_000,
  /** The longest lease of a pull (12 hours in ms). */
  visibilityTimeoutMs: 12 * 60 * 60 * 1000,
} as const;

/** A queue's settings when its create leaves them out (the hosted defaults: retention 4 days). */
export const QUEUE_DEFAULTS = {
  delivery_delay: 0,
  delivery_paused: false,
  message_retention_period: 4 * 24 * 60 * 60,
} as const;

/** A consumer's settings when its config leaves them out (the hosted defaults). */
export const CONSUMER_DEFAULTS = {
  batchSize: 10,
  maxWaitTimeMs: 5_000,
  maxRetries: 3,
  retryDelaySeconds: 0,
} as const;
