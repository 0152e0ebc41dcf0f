import type { Bus } from "../../core/cluster/bus.js";
import type { Postgres, SqlRunner, Transaction } from "../../core/db/postgres.js";
import { checkAddition, RULE_COLUMNS, ruleFromRow, ruleValues, type NotificationRuleIndex, type ObjectChange, type RuleRow } from "./rules.js";
import { type NotificationRule, type OutboxMessage } from "./store.js";
import type { BucketRef } from "../store.js";

/** Rules in the order the API lists them: oldest first, those of one request as it listed them. */
const ruleOrder = (table = "") => `${table}created_at, ${table}seq`;

/** The bus area, and what a rule change announces (`notifications:<account>/<bucket>`): nodes reload that bucket. */
export const R2_BUS_AREA = "r2";
export const RULES_NOTICE = "notifications:";

/**
 * Event notification rules and the outbox on PostgreSQL (r2.notification_rules, r2.notification_outbox), as
 * sqlite-notifications.ts keeps them. A rule change is announced on the bus in its transaction, so every node's
 * index follows; the outbox is leased with SKIP LOCKED, so two nodes' relays never move the same message at once.
 */
export class PgNotifications {
  constructor(
    private readonly pg: Postgres,
    readonly index: NotificationRuleIndex,
    private readonly bus?: Bus,
  ) {}

  async rules(on: SqlRunner, bucketId: string): Promise<NotificationRule[]> {
    const rows = await on.rows<RuleRow>(`SELECT ${RULE_COLUMNS} FROM r2.notification_rules WHERE bucket_id = $1 ORDER BY ${ruleOrder()}`, [bucketId]);
    return rows.map(ruleFromRow);
  }

  async all(): Promise<{ bucket: BucketRef; rules: NotificationRule[] }[]> {
    const rows = await this.pg.rows<RuleRow & { account_id: string; name: string }>(
      `SELECT b.account_id, b.name, r.${RULE_COLUMNS.split(", ").join(", r.")}
       FROM r2.notification_rules r JOIN r2.buckets b ON b.id = r.bucket_id ORDER BY ${ruleOrder("r.")}`,
    );
    const byBucket = new Map<string, { bucket: BucketRef; rules: NotificationRule[] }>();
    for (const r of rows) {
      const k = `${r.account_id}/${r.name}`;
      let entry = byBucket.get(k);
      if (!entry) byBucket.set(k, (entry = { bucket: { accountId: r.account_id, bucketName: r.name }, rules: [] }));
      entry.rules.push(ruleFromRow(r));
    }
    return [...byBucket.values()];
  }

  /** Reloads one bucket's rules into the index (another node changed them). */
  async reload(bucket: BucketRef): Promise<void> {
    const rows = await this.pg.rows<RuleRow>(
      `SELECT r.${RULE_COLUMNS.split(", ").join(", r.")} FROM r2.notification_rules r JOIN r2.buckets b ON b.id = r.bucket_id
       WHERE b.account_id = $1 AND b.name = $2 ORDER BY ${ruleOrder("r.")}`,
      [bucket.accountId, bucket.bucketName],
    );
    this.index.set(bucket, rows.map(ruleFromRow));
  }

  /** `bucketId` locks the bucket's row (FOR UPDATE): two nodes adding rules to one bucket take turns, so overlaps are seen. */
  async add(bucket: BucketRef, bucketId: (tx: Transaction) => Promise<string>, rules: NotificationRule[]): Promise<void> {
    const now = await this.pg.withTransaction(async (tx) => {
      const id = await bucketId(tx);
      checkAddition(await this.rules(tx, id), rules);
      for (const r of rules)
        await tx.execute(`INSERT INTO r2.notification_rules (bucket_id, ${RULE_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, [id, ...ruleValues(r)]);
      await this.announce(bucket, tx);
      return this.rules(tx, id);
    });
    this.index.set(bucket, now);
  }

  async delete(bucket: BucketRef, bucketId: (tx: Transaction) => Promise<string>, queueId: string, ruleIds?: readonly string[]): Promise<number> {
    let removed = 0;
    const now = await this.pg.withTransaction(async (tx) => {
      const id = await bucketId(tx);
      removed =
        ruleIds === undefined
          ? await tx.execute("DELETE FROM r2.notification_rules WHERE bucket_id = $1 AND queue_id = $2", [id, queueId])
          : await tx.execute("DELETE FROM r2.notification_rules WHERE bucket_id = $1 AND queue_id = $2 AND rule_id = ANY($3::text[])", [id, queueId, ruleIds]);
      await this.announce(bucket, tx);
      return this.rules(tx, id);
    });
    this.index.set(bucket, now);
    return removed;
  }

  async deleteQueue(accountId: string, queueId: string): Promise<number> {
    const { buckets, count } = await this.pg.withTransaction(async (tx) => {
      const rows = await tx.rows<{ name: string }>(
        `DELETE FROM r2.notification_rules r USING r2.buckets b WHERE r.bucket_id = b.id AND b.account_id = $1 AND r.queue_id = $2 RETURNING b.name`,
        [accountId, queueId],
      );
      const names = [...new Set(rows.map((r) => r.name))];
      for (const bucketName of names) await this.announce({ accountId, bucketName }, tx);
      return { buckets: names, count: rows.length };
    });
    for (const bucketName of buckets) await this.reload({ accountId, bucketName });
    return count;
  }

  /** The bucket is gone: other nodes drop its rules too. */
  async bucketDeleted(bucket: BucketRef, tx: Transaction): Promise<void> {
    await this.announce(bucket, tx);
  }

  private async announce(bucket: BucketRef, tx: Transaction): Promise<void> {
    await this.bus?.publish(R2_BUS_AREA, `${RULES_NOTICE}${bucket.accountId}/${bucket.bucketName}`, tx);
  }

  /** Inside the object write's transaction: records a message for each matching rule; true when it did. */
  async record(tx: Transaction, change: ObjectChange): Promise<boolean> {
    if (!this.index.hasRules(change.bucket)) return false;
    const entries = this.index.entriesFor(change);
    if (entries.length === 0) return false;
    await tx.execute(
      "INSERT INTO r2.notification_outbox (account_id, queue_id, message_id, body) SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[])",
      [entries.map((e) => e.accountId), entries.map((e) => e.queueId), entries.map((e) => e.messageId), entries.map((e) => e.body)],
    );
    return true;
  }

  async lease(max: number, leaseMs: number, nowMs: number): Promise<OutboxMessage[]> {
    const rows = await this.pg.rows<{ id: string; account_id: string; queue_id: string; body: string }>(
      `UPDATE r2.notification_outbox SET leased_until = $1 WHERE id IN
         (SELECT id FROM r2.notification_outbox WHERE leased_until <= $2 ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED)
       RETURNING id::text AS id, account_id, queue_id, body`,
      [nowMs + leaseMs, nowMs, max],
    );
    return rows.sort((a, b) => (BigInt(a.id) < BigInt(b.id) ? -1 : 1)).map((r) => ({ id: r.id, accountId: r.account_id, queueId: r.queue_id, body: r.body }));
  }

  async ack(ids: readonly string[]): Promise<void> {
    if (ids.length > 0) await this.pg.execute("DELETE FROM r2.notification_outbox WHERE id = ANY($1::bigint[])", [ids]);
  }
}
