/** What R2 stores of event notifications: the rules of a bucket, and the messages waiting for their queues. */

/** The object actions a rule can name, as the hosted API spells them. */
export const NOTIFICATION_ACTIONS = ["PutObject", "CopyObject", "CompleteMultipartUpload", "DeleteObject", "LifecycleDeletion"] as const;
export type NotificationAction = (typeof NOTIFICATION_ACTIONS)[number];

export interface NotificationRule {
  ruleId: string;
  queueId: string;
  actions: NotificationAction[];
  /** "" matches every key. */
  prefix: string;
  suffix: string;
  description: string;
  /** ISO 8601 */
  createdAt: string;
}

/** A message recorded with an object change, waiting to be moved to its queue. */
export interface OutboxMessage {
  id: string;
  accountId: string;
  queueId: string;
  /** JSON (messageBody). */
  body: string;
}
