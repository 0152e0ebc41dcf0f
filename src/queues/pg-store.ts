import type { Postgres } from "../core/db/postgres.js";
import { QueuesErrors } from "./errors.js";
import { QUEUES_LIMITS } from "./limits.js";
import { leased, newId, queueStats } from "./sqlite-store.js";
import type { ConsumerInput, ConsumerRecord, LeasedMessage, NewMessage, QueueRecord, QueuesStore, QueueStats, Settlement, WorkerConsumer } from "./store.js";
import { checkQueueName, consumerColumns, consumerRecord, queueRecord, type ConsumerRow, type QueueRow } from "./validation.js";

export const QUEUES_AREA = "queues";

const isUniqueViolation = (err: unknown) => (err as { code?: string }).code === "23505";
const CONSUMER_SELECT = `SELECT c.*, q.name AS queue_name, q.account_id FROM queues.consumers c JOIN queues.queues q ON q.id = c.queue_id`;

/**
 * QueuesStore on PostgreSQL (schema `queues`), shared by every node. Leasing is one UPDATE over rows picked with
 * FOR UPDATE SKIP LOCKED, so two nodes polling the same queue lease disjoint messages; a settlement applies only
 * while its lease id is still the row's, so a node whose lease expired (and the message went to another) changes
 * nothing. Nothing is cached per node: the bus carries nothing for queues.
 */
export class PgQueuesStore implements QueuesStore {
  constructor(private readonly pg: Postgres) {}

  async createQueue(accountId: string, name: string): Promise<QueueRecord> {
    checkQueueName(name);
    const now = Date.now();
    const row: QueueRow = { id: newId(), name, created_on: now, modified_on: now };
    await this.pg.withTransaction(async (tx) => {
      // One creation at a time per account, so the count below holds until the commit.
      await tx.execute("SELECT pg_advisory_xact_lock(hashtext($1))", [`queues:${accountId}`]);
      const { n } = (await tx.row<{ n: string }>("SELECT count(*) AS n FROM queues.queues WHERE account_id = $1", [accountId]))!;
      if (Number(n) >= QUEUES_LIMITS.queuesPerAccount) throw QueuesErrors.tooManyQueues();
      try {
        await tx.execute("INSERT INTO queues.queues (id, account_id, name, created_on, modified_on) VALUES ($1, $2, $3, $4, $4)", [
          row.id,
          accountId,
          name,
          now,
        ]);
      } catch (err) {
        if (isUniqueViolation(err)) throw QueuesErrors.nameTaken(name);
        throw err;
      }
    });
    return queueRecord(row);
  }

  async listQueues(accountId: string, opts: { names?: readonly string[]; offset?: number; limit?: number } = {}) {
    const names = opts.names ?? null;
    const where = "account_id = $1 AND ($2::text[] IS NULL OR name = ANY($2::text[]))";
    const rows = await this.pg.rows<QueueRow>(`SELECT * FROM queues.queues WHERE ${where} ORDER BY created_on, id LIMIT $3 OFFSET $4`, [
      accountId,
      names,
      opts.limit ?? null,
      opts.offset ?? 0,
    ]);
    const { n } = (await this.pg.row<{ n: string }>(`SELECT count(*) AS n FROM queues.queues WHERE ${where}`, [accountId, names]))!;
    return { queues: rows.map(queueRecord), total: Number(n) };
  }

  async getQueue(accountId: string, queueId: string): Promise<QueueRecord | undefined> {
    const row = await this.pg.row<QueueRow>("SELECT * FROM queues.queues WHERE account_id = $1 AND id = $2", [accountId, queueId]);
    return row && queueRecord(row);
  }

  async getQueueByName(accountId: string, name: string): Promise<QueueRecord | undefined> {
    const row = await this.pg.row<QueueRow>("SELECT * FROM queues.queues WHERE account_id = $1 AND name = $2", [accountId, name]);
    return row && queueRecord(row);
  }

  async renameQueue(accountId: string, queueId: string, name: string): Promise<QueueRecord> {
    checkQueueName(name);
    let row: QueueRow | undefined;
    try {
      row = await this.pg.row<QueueRow>("UPDATE queues.queues SET name = $1, modified_on = $2 WHERE account_id = $3 AND id = $4 RETURNING *", [
        name,
        Date.now(),
        accountId,
        queueId,
      ]);
    } catch (err) {
      if (isUniqueViolation(err)) throw QueuesErrors.nameTaken(name);
      throw err;
    }
    if (!row) throw QueuesErrors.queueNotFound();
    return queueRecord(row);
  }

  async deleteQueue(accountId: string, queueId: string): Promise<void> {
    if ((await this.pg.execute("DELETE FROM queues.queues WHERE account_id = $1 AND id = $2", [accountId, queueId])) === 0) throw QueuesErrors.queueNotFound();
  }

  private async queueOf(accountId: string, queueId: string): Promise<void> {
    if (!(await this.pg.row("SELECT 1 FROM queues.queues WHERE account_id = $1 AND id = $2", [accountId, queueId]))) throw QueuesErrors.queueNotFound();
  }

  private async consumer(consumerId: string): Promise<ConsumerRecord> {
    return consumerRecord((await this.pg.row<ConsumerRow>(`${CONSUMER_SELECT} WHERE c.id = $1`, [consumerId]))!);
  }

  async addConsumer(accountId: string, queueId: string, input: ConsumerInput): Promise<ConsumerRecord> {
    await this.queueOf(accountId, queueId);
    const id = newId();
    try {
      await this.pg.execute(
        "INSERT INTO queues.consumers (id, queue_id, type, script_name, settings, dead_letter_queue, created_on) VALUES ($1, $2, $3, $4, $5, $6, $7)",
        [id, queueId, ...consumerColumns(input), Date.now()],
      );
    } catch (err) {
      if (isUniqueViolation(err)) throw QueuesErrors.oneWorkerConsumer();
      // The queue was deleted meanwhile (foreign key).
      if ((err as { code?: string }).code === "23503") throw QueuesErrors.queueNotFound();
      throw err;
    }
    return this.consumer(id);
  }

  async updateConsumer(accountId: string, queueId: string, consumerId: string, input: ConsumerInput): Promise<ConsumerRecord> {
    await this.queueOf(accountId, queueId);
    const changed = await this.pg.execute(
      "UPDATE queues.consumers SET type = $1, script_name = $2, settings = $3, dead_letter_queue = $4 WHERE id = $5 AND queue_id = $6",
      [...consumerColumns(input), consumerId, queueId],
    );
    if (changed === 0) throw QueuesErrors.consumerNotFound();
    return this.consumer(consumerId);
  }

  async listConsumers(accountId: string, queueId: string): Promise<ConsumerRecord[]> {
    await this.queueOf(accountId, queueId);
    return (await this.pg.rows<ConsumerRow>(`${CONSUMER_SELECT} WHERE c.queue_id = $1 ORDER BY c.created_on`, [queueId])).map(consumerRecord);
  }

  async deleteConsumer(accountId: string, queueId: string, consumerId: string): Promise<void> {
    await this.queueOf(accountId, queueId);
    if ((await this.pg.execute("DELETE FROM queues.consumers WHERE id = $1 AND queue_id = $2", [consumerId, queueId])) === 0)
      throw QueuesErrors.consumerNotFound();
  }

  async workerConsumers(): Promise<WorkerConsumer[]> {
    const rows = await this.pg.rows<ConsumerRow>(`${CONSUMER_SELECT} WHERE c.type = 'worker' ORDER BY c.created_on`);
    return rows.map((r) => ({ ...consumerRecord(r), account_id: r.account_id, script_name: r.script_name! }));
  }
  async consumersOfScript(accountId: string, scriptName: string): Promise<ConsumerRecord[]> {
    const rows = await this.pg.rows<ConsumerRow>(
      `${CONSUMER_SELECT} WHERE q.account_id = $1 AND c.type = 'worker' AND c.script_name = $2 ORDER BY c.created_on`,
      [accountId, scriptName],
    );
    return rows.map(consumerRecord);
  }

  async deleteConsumersOfScript(accountId: string, scriptName: string): Promise<number> {
    return this.pg.execute(
      "DELETE FROM queues.consumers WHERE type = 'worker' AND script_name = $1 AND queue_id IN (SELECT id FROM queues.queues WHERE account_id = $2)",
      [scriptName, accountId],
    );
  }

  async purge(accountId: string, queueId: string, startedAtMs: number): Promise<number> {
    return this.pg.withTransaction(async (tx) => {
      // The queue row locked: a purge and a delete of the queue do not cross.
      const found = await tx.row("UPDATE queues.queues SET purged_at = $3 WHERE account_id = $1 AND id = $2 RETURNING 1", [accountId, queueId, startedAtMs]);
      if (!found) throw QueuesErrors.queueNotFound();
      return tx.execute("DELETE FROM queues.messages WHERE queue_id = $1", [queueId]);
    });
  }

  async lastPurge(accountId: string, queueId: string): Promise<number | null> {
    const row = await this.pg.row<{ purged_at: string | null }>("SELECT purged_at FROM queues.queues WHERE account_id = $1 AND id = $2", [accountId, queueId]);
    if (!row) throw QueuesErrors.queueNotFound();
    return row.purged_at === null ? null : Number(row.purged_at);
  }

  async enqueue(queueId: string, messages: readonly NewMessage[]): Promise<void> {
    const now = Date.now();
    try {
      await this.pg.execute(
        `INSERT INTO queues.messages (id, queue_id, body, content_type, sent_at, visible_at)
         SELECT id, $1, body, content_type, $2, $2 + delay * 1000 FROM unnest($3::text[], $4::bytea[], $5::text[], $6::bigint[]) AS m(id, body, content_type, delay)`,
        [queueId, now, messages.map(() => newId()), messages.map((m) => m.body), messages.map((m) => m.contentType), messages.map((m) => m.delaySeconds)],
      );
    } catch (err) {
      if ((err as { code?: string }).code === "23503") throw QueuesErrors.queueNotFound();
      throw err;
    }
  }

  async stats(queueId: string, nowMs: number): Promise<QueueStats> {
    const r = (await this.pg.row<{ backlog: string; bytes: string; sent: string | null; ready: string; oldest: string | null }>(
      `SELECT count(*) AS backlog, coalesce(sum(length(body)), 0) AS bytes, min(sent_at) AS sent, count(*) FILTER (WHERE visible_at <= $2) AS ready,
         min(visible_at) FILTER (WHERE visible_at <= $2) AS oldest
       FROM queues.messages WHERE queue_id = $1`,
      [queueId, nowMs],
    ))!;
    return queueStats(r);
  }

  async lease(queueId: string, max: number, leaseMs: number, nowMs: number): Promise<LeasedMessage[]> {
    const rows = await this.pg.rows<{ seq: string; id: string; body: Buffer; content_type: string; attempts: number; sent_at: string; lease_id: string }>(
      `WITH picked AS (
         SELECT seq FROM queues.messages WHERE queue_id = $1 AND visible_at <= $2 ORDER BY visible_at, seq LIMIT $3 FOR UPDATE SKIP LOCKED
       )
       UPDATE queues.messages m SET attempts = m.attempts + 1, visible_at = $4, lease_id = replace(gen_random_uuid()::text, '-', '')
       FROM picked WHERE m.seq = picked.seq
       RETURNING m.seq, m.id, m.body, m.content_type, m.attempts, m.sent_at, m.lease_id`,
      [queueId, nowMs, max, nowMs + leaseMs],
    );
    return rows.sort((a, b) => Number(a.seq) - Number(b.seq)).map((r) => leased(r, r.lease_id));
  }

  async settle(queueId: string, settlements: readonly Settlement[]): Promise<number> {
    if (settlements.length === 0) return 0;
    return this.pg.withTransaction(async (tx) => {
      let n = 0;
      for (const s of settlements) {
        if (s.action === "retry") {
          n += await tx.execute("UPDATE queues.messages SET visible_at = $1, lease_id = NULL WHERE id = $2 AND queue_id = $3 AND lease_id = $4", [
            s.visibleAtMs,
            s.id,
            queueId,
            s.leaseId,
          ]);
          continue;
        }
        const gone = await tx.row<{ body: Buffer; content_type: string }>(
          "DELETE FROM queues.messages WHERE id = $1 AND queue_id = $2 AND lease_id = $3 RETURNING body, content_type",
          [s.id, queueId, s.leaseId],
        );
        if (!gone) continue;
        n++;
        if (s.action === "dead-letter") {
          const now = Date.now();
          await tx.execute(
            "INSERT INTO queues.messages (id, queue_id, body, content_type, sent_at, visible_at) SELECT $1, id, $2, $3, $4, $4 FROM queues.queues WHERE id = $5",
            [newId(), gone.body, gone.content_type, now, s.toQueueId],
          );
        }
      }
      return n;
    });
  }
}
