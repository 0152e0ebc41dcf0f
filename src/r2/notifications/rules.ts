import { randomUUID } from "node:crypto";
import { R2Errors } from "../errors.js";
import type { BucketRef, R2ObjectInfo } from "../store.js";
import { NOTIFICATION_ACTIONS, type NotificationAction, type NotificationRule } from "./store.js";

/**
 * Event notification rules (what the hosted API calls a bucket's "configuration"): for each queue of the bucket's
 * account, which object actions, under which key prefix and suffix, send a message to it. Kept in R2's own
 * database beside the objects, so a message is recorded by the transaction that changes the object (outbox.ts).
 */

/** The hosted limit: rules of one bucket, all queues together. */
export const MAX_RULES_PER_BUCKET = 100;
const MAX_FILTER_CHARS = 1024;
const MAX_DESCRIPTION_CHARS = 1024;

export interface NotificationRuleInput {
  actions: NotificationAction[];
  prefix?: string;
  suffix?: string;
  description?: string;
}

/** Checks rules from a request and gives each an id and a creation time. */
export function newRules(queueId: string, input: readonly NotificationRuleInput[], now = new Date()): NotificationRule[] {
  if (input.length === 0) throw R2Errors.invalidNotificationConfig("rules must list at least one rule");
  return input.map((r) => {
    const actions = [...new Set(r.actions)];
    if (actions.length === 0) throw R2Errors.invalidNotificationConfig("every rule must name at least one action");
    for (const a of actions) {
      if (!(NOTIFICATION_ACTIONS as readonly string[]).includes(a))
        throw R2Errors.invalidNotificationConfig(`unknown action "${String(a).slice(0, 40)}"; use ${NOTIFICATION_ACTIONS.join(", ")}`);
    }
    const prefix = r.prefix ?? "";
    const suffix = r.suffix ?? "";
    const description = r.description ?? "";
    if (prefix.length > MAX_FILTER_CHARS || suffix.length > MAX_FILTER_CHARS || description.length > MAX_DESCRIPTION_CHARS)
      throw R2Errors.invalidNotificationConfig(`prefix and suffix take at most ${MAX_FILTER_CHARS} characters, a description ${MAX_DESCRIPTION_CHARS}`);
    return { ruleId: randomUUID(), queueId, actions, prefix, suffix, description, createdAt: now.toISOString() };
  });
}

/**
 * Whether one key could match both rules for one action (the hosted API refuses such a pair: one change would send
 * two messages). Two prefixes can both hold when one starts the other, two suffixes when one ends the other; then
 * the longer prefix followed by the longer suffix is a key matching both.
 */
export function rulesOverlap(a: NotificationRule, b: NotificationRule): boolean {
  if (!a.actions.some((x) => b.actions.includes(x))) return false;
  const prefixesMeet = a.prefix.startsWith(b.prefix) || b.prefix.startsWith(a.prefix);
  const suffixesMeet = a.suffix.endsWith(b.suffix) || b.suffix.endsWith(a.suffix);
  return prefixesMeet && suffixesMeet;
}

/** Refuses adding `added` to a bucket that has `existing` (all queues): too many, or two that overlap. */
export function checkAddition(existing: readonly NotificationRule[], added: readonly NotificationRule[]): void {
  if (existing.length + added.length > MAX_RULES_PER_BUCKET) throw R2Errors.tooManyNotificationRules();
  const all = [...existing];
  for (const rule of added) {
    const clash = all.find((other) => rulesOverlap(rule, other));
    if (clash) throw R2Errors.overlappingNotificationRules(clash.ruleId);
    all.push(rule);
  }
}

export const ruleMatches = (rule: NotificationRule, action: NotificationAction, key: string): boolean =>
  rule.actions.includes(action) && key.startsWith(rule.prefix) && key.endsWith(rule.suffix);

/** One change of one object, as the store commits it. */
export interface ObjectChange {
  bucket: BucketRef;
  action: NotificationAction;
  key: string;
  /** The object written (absent for deletes: the hosted message then carries only the key). */
  object?: Pick<R2ObjectInfo, "size" | "etag">;
  copySource?: { bucket: string; key: string };
}

/** What a write tells the commit, for its notifications: which bucket, and how the object came to be. */
export type ObjectWrite = Pick<ObjectChange, "bucket" | "action" | "copySource">;

/** The message body a queue receives, as the hosted platform sends it. */
export function messageBody(change: ObjectChange, eventTime: Date): string {
  const object: Record<string, unknown> = { key: change.key };
  if (change.object) {
    object.size = change.object.size;
    object.eTag = change.object.etag;
  }
  const body: Record<string, unknown> = {
    account: change.bucket.accountId,
    action: change.action,
    bucket: change.bucket.bucketName,
    object,
    eventTime: eventTime.toISOString(),
  };
  if (change.copySource) body.copySource = { bucket: change.copySource.bucket, object: change.copySource.key };
  return JSON.stringify(body);
}

/** What the store records for one change: a message for every queue with a matching rule. */
export interface OutboxEntry {
  accountId: string;
  queueId: string;
  /** Names the message wherever it is copied (edgecli state copy). */
  messageId: string;
  body: string;
}

const bucketKey = (ref: BucketRef) => `${ref.accountId}/${ref.bucketName}`;

/**
 * Every bucket's rules in memory, so that a write into a bucket without rules costs one Map lookup and no query.
 * The store updates it after its own rule changes commit; on PostgreSQL the service reloads a bucket on another
 * node's bus notice (and everything on a resync). `onRecorded` is called after a commit that recorded messages,
 * to wake the relay.
 */
export class NotificationRuleIndex {
  private readonly byBucket = new Map<string, NotificationRule[]>();
  onRecorded: () => void = () => undefined;

  /** The hot path's one check. */
  hasRules(ref: BucketRef): boolean {
    return this.byBucket.has(bucketKey(ref));
  }

  set(ref: BucketRef, rules: readonly NotificationRule[]): void {
    if (rules.length === 0) this.byBucket.delete(bucketKey(ref));
    else this.byBucket.set(bucketKey(ref), [...rules]);
  }

  replaceAll(buckets: readonly { bucket: BucketRef; rules: NotificationRule[] }[]): void {
    this.byBucket.clear();
    for (const b of buckets) this.set(b.bucket, b.rules);
  }

  /** The messages one change sends: one for each rule that matches (rules never overlap, so one per queue at most). */
  entriesFor(change: ObjectChange, eventTime = new Date()): OutboxEntry[] {
    const rules = this.byBucket.get(bucketKey(change.bucket));
    if (!rules) return [];
    const matched = rules.filter((r) => ruleMatches(r, change.action, change.key));
    if (matched.length === 0) return [];
    const body = messageBody(change, eventTime);
    return matched.map((r) => ({ accountId: change.bucket.accountId, queueId: r.queueId, messageId: randomUUID(), body }));
  }
}

/** Groups a bucket's rules by queue, as the hosted GET answers them (queue names added by the caller). */
export function rulesByQueue(rules: readonly NotificationRule[]): Map<string, NotificationRule[]> {
  const byQueue = new Map<string, NotificationRule[]>();
  for (const r of rules) {
    const list = byQueue.get(r.queueId) ?? [];
    list.push(r);
    byQueue.set(r.queueId, list);
  }
  return byQueue;
}

/** A rule's row, as both backends keep it (sqlite-migrations.ts, pg-migrations.ts). */
export interface RuleRow {
  rule_id: string;
  queue_id: string;
  actions: string;
  prefix: string;
  suffix: string;
  description: string;
  created_at: string;
}

export const ruleFromRow = (r: RuleRow): NotificationRule => ({
  ruleId: r.rule_id,
  queueId: r.queue_id,
  actions: JSON.parse(r.actions) as NotificationAction[],
  prefix: r.prefix,
  suffix: r.suffix,
  description: r.description,
  createdAt: r.created_at,
});

/** A rule's column values after bucket_id, in the order of RULE_COLUMNS. */
export const ruleValues = (r: NotificationRule) => [r.ruleId, r.queueId, JSON.stringify(r.actions), r.prefix, r.suffix, r.description, r.createdAt];
export const RULE_COLUMNS = "rule_id, queue_id, actions, prefix, suffix, description, created_at";
