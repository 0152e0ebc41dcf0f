import type { Db } from "../../core/db/sqlite.js";
import { checkAddition, RULE_COLUMNS, ruleFromRow, ruleValues, type NotificationRuleIndex, type ObjectChange, type RuleRow } from "./rules.js";
import { type NotificationRule, type OutboxMessage } from "./store.js";
import type { BucketRef } from "../store.js";

/** Rules in the order the API lists them: oldest first, those of one request as it listed them. */
const ruleOrder = (table = "") => `${table}created_at, ${table}rowid`;

/**
 * Event notification rules and the outbox in r2.sqlite. `record` runs inside the object write's own transaction,
 * so the message and the change commit together; it asks nothing of the database for a bucket without rules.
 */
export class SqliteNotifications {
  private readonly q;

  constructor(
    private readonly db: Db,
    readonly index: NotificationRuleIndex,
  ) {
    this.q = {
      rules: db.prepare<[number], RuleRow>(`SELECT ${RULE_COLUMNS} FROM notification_rules WHERE bucket_id = ? ORDER BY ${ruleOrder()}`),
      allRules: db.prepare<[], RuleRow & { account_id: string; name: string }>(
        `SELECT b.account_id, b.name, r.${RULE_COLUMNS.split(", ").join(", r.")} FROM notification_rules r JOIN buckets b ON b.id = r.bucket_id ORDER BY ${ruleOrder("r.")}`,
      ),
      insertRule: db.prepare(`INSERT INTO notification_rules (bucket_id, ${RULE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`),
      deleteQueueRules: db.prepare<[number, string]>("DELETE FROM notification_rules WHERE bucket_id = ? AND queue_id = ?"),
      deleteRule: db.prepare<[number, string, string]>("DELETE FROM notification_rules WHERE bucket_id = ? AND queue_id = ? AND rule_id = ?"),
      deleteAccountQueueRules: db.prepare<[string, string]>(
        "DELETE FROM notification_rules WHERE queue_id = ? AND bucket_id IN (SELECT id FROM buckets WHERE account_id = ?)",
      ),
      insertMessage: db.prepare("INSERT INTO notification_outbox (account_id, queue_id, message_id, body) VALUES (?, ?, ?, ?)"),
      lease: db.prepare<[number, number, number], { id: number; account_id: string; queue_id: string; body: string }>(
        `UPDATE notification_outbox SET leased_until = ? WHERE id IN
           (SELECT id FROM notification_outbox WHERE leased_until <= ? ORDER BY id LIMIT ?)
         RETURNING id, account_id, queue_id, body`,
      ),
      ack: db.prepare<[number]>("DELETE FROM notification_outbox WHERE id = ?"),
    };
  }

  rules(bucketId: number): NotificationRule[] {
    return this.q.rules.all(bucketId).map(ruleFromRow);
  }

  all(): { bucket: BucketRef; rules: NotificationRule[] }[] {
    const byBucket = new Map<string, { bucket: BucketRef; rules: NotificationRule[] }>();
    for (const r of this.q.allRules.iterate()) {
      const k = `${r.account_id}/${r.name}`;
      let entry = byBucket.get(k);
      if (!entry) byBucket.set(k, (entry = { bucket: { accountId: r.account_id, bucketName: r.name }, rules: [] }));
      entry.rules.push(ruleFromRow(r));
    }
    return [...byBucket.values()];
  }

  add(bucket: BucketRef, bucketId: () => number, rules: NotificationRule[]): void {
    const now = this.db
      .transaction(() => {
        const id = bucketId();
        const existing = this.rules(id);
        checkAddition(existing, rules);
        for (const r of rules) this.q.insertRule.run(id, ...ruleValues(r));
        return this.rules(id);
      })
      .immediate();
    this.index.set(bucket, now);
  }

  delete(bucket: BucketRef, bucketId: () => number, queueId: string, ruleIds?: readonly string[]): number {
    let removed = 0;
    const now = this.db
      .transaction(() => {
        const id = bucketId();
        if (ruleIds === undefined) removed = this.q.deleteQueueRules.run(id, queueId).changes;
        else for (const ruleId of ruleIds) removed += this.q.deleteRule.run(id, queueId, ruleId).changes;
        return this.rules(id);
      })
      .immediate();
    this.index.set(bucket, now);
    return removed;
  }

  deleteQueue(accountId: string, queueId: string): number {
    const removed = this.q.deleteAccountQueueRules.run(queueId, accountId).changes;
    if (removed > 0) this.index.replaceAll(this.all());
    return removed;
  }

  /** Inside the object write's transaction: records a message for each matching rule; true when it did. */
  record(change: ObjectChange): boolean {
    if (!this.index.hasRules(change.bucket)) return false;
    const entries = this.index.entriesFor(change);
    for (const e of entries) this.q.insertMessage.run(e.accountId, e.queueId, e.messageId, e.body);
    return entries.length > 0;
  }

  lease(max: number, leaseMs: number, nowMs: number): OutboxMessage[] {
    return this.q.lease
      .all(nowMs + leaseMs, nowMs, max)
      .sort((a, b) => a.id - b.id)
      .map((r) => ({ id: String(r.id), accountId: r.account_id, queueId: r.queue_id, body: r.body }));
  }

  ack(ids: readonly string[]): void {
    this.db.transaction(() => {
      for (const id of ids) this.q.ack.run(Number(id));
    })();
  }
}
