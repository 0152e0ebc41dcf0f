import type { Postgres, SqlRunner } from "../core/db/postgres.js";
import { QueuesErrors } from "./errors.js";
import { QUEUE_DEFAULTS, QUEUES_LIMITS } from "./limits.js";
import { backlogOf, bodyBytes, leased, newId, queueStats, type CounterRow } from "./sqlite-store.js";
import type {
  Backlog,
  ConsumerInput,
  ConsumerRecord,
  LeasedMessage,
  NewMessage,
  QueueRecord,
  QueueSettings,
  QueuesStore,
  QueueStats,
  Settlement,
  WorkerConsumer,
} from "./store.js";
import { checkQueueName, consumerColumns, consumerRecord, queueRecord, type ConsumerRow, type QueueRow } from "./validation.js";

export const QUEUES_AREA = "queues";

const isUniqueViolation = (err: unknown) => (err as { code?: string }).code === "23505";
const CONSUMER_SELECT = `SELECT c.*, q.name AS queue_name, q.account_id FROM queues.consumers c JOIN queues.queues q ON q.id = c.queue_id`;

/**
 * QueuesStore on PostgreSQL (schema `queues`), shared by every node. Leasing is one UPDATE over rows picked with
 * FOR UPDATE SKIP LOCKED, so two nodes polling the same queue lease disjoint messages; a settlement applies only
 * while its lease id is still the row's, so a node whose lease expired (and the message went to another) changes
 * nothing. Nothing is cached per node: the bus carries nothing for queues.
 *
 * The backlog counters on the queue row: a send adds to them with one statement that also inserts, guarded by the
 * cap, so concurrent senders on every node queue up on the row's lock and never pass the cap together. Whatever
 * takes messages away (settle, purge, delete) deletes them first and changes the counters after, by what it
 * deleted: they take their locks messages first, then queue rows (in id order), so they do not deadlock on each
 * other; should PostgreSQL still find a deadlock with a send, one transaction fails whole and the counters stay true.
 */
export class PgQueuesStore implements QueuesStore {
  constructor(private readonly pg: Postgres) {}

  async createQueue(accountId: string, name: string, settings: Partial<QueueSettings> = {}): Promise<QueueRecord> {
    checkQueueName(name);
    const now = Date.now();
    const s = { ...QUEUE_DEFAULTS, ...settings };
    const row: QueueRow = { id: newId(), name, created_on: now, modified_on: now, ...s };
    await this.pg.withTransaction(async (tx) => {
      // One creation at a time per account, so the count below holds until the commit.
      await tx.execute("SELECT pg_advisory_xact_lock(hashtext($1))", [`queues:${accountId}`]);
      const { n } = (await tx.row<{ n: string }>("SELECT count(*) AS n FROM queues.queues WHERE account_id = $1", [accountId]))!;
      if (Number(n) >= QUEUES_LIMITS.queuesPerAccount) throw QueuesErrors.tooManyQueues();
      try {
        await tx.execute(
          `INSERT INTO queues.queues (id, account_id, name, created_on, modified_on, delivery_delay, delivery_paused, message_retention_period)
           VALUES ($1, $2, $3, $4, $4, $5, $6, $7)`,
          [row.id, accountId, name, now, s.delivery_delay, s.delivery_paused, s.message_retention_period],
        );
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

  async updateQueue(accountId: string, queueId: string, change: { name?: string; settings?: Partial<QueueSettings> }): Promise<QueueRecord> {
    if (change.name !== undefined) checkQueueName(change.name);
    const s = change.settings ?? {};
    let row: QueueRow | undefined;
    try {
      // A column given as null keeps its value.
      row = await this.pg.row<QueueRow>(
        `UPDATE queues.queues SET name = coalesce($1, name), delivery_delay = coalesce($2, delivery_delay), delivery_paused = coalesce($3, delivery_paused),
           message_retention_period = coalesce($4, message_retention_period), modified_on = $5
         WHERE account_id = $6 AND id = $7 RETURNING *`,
        [change.name ?? null, s.delivery_delay ?? null, s.delivery_paused ?? null, s.message_retention_period ?? null, Date.now(), accountId, queueId],
      );
    } catch (err) {
      if (isUniqueViolation(err)) throw QueuesErrors.nameTaken(change.name ?? "");
      throw err;
    }
    if (!row) throw QueuesErrors.queueNotFound();
    return queueRecord(row);
  }

  async deleteQueue(accountId: string, queueId: string): Promise<void> {
    await this.pg.withTransaction(async (tx) => {
      // The messages first (then the row, which cascades to nothing more): the lock order of settle and purge.
      await tx.execute("DELETE FROM queues.messages WHERE queue_id = (SELECT id FROM queues.queues WHERE account_id = $1 AND id = $2)", [accountId, queueId]);
      if ((await tx.execute("DELETE FROM queues.queues WHERE account_id = $1 AND id = $2", [accountId, queueId])) === 0) throw QueuesErrors.queueNotFound();
    });
  }

  private async queueOf(accountId: string, queueId: string, db: SqlRunner = this.pg): Promise<void> {
    if (!(await db.row("SELECT 1 FROM queues.queues WHERE account_id = $1 AND id = $2", [accountId, queueId]))) throw QueuesErrors.queueNotFound();
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
      await this.queueOf(accountId, queueId, tx);
      // The counters go down by what was deleted, not to zero: a send that commits meanwhile keeps its messages.
      const gone = (await tx.row<{ n: string; bytes: string }>(
        `WITH gone AS (DELETE FROM queues.messages WHERE queue_id = $1 RETURNING length(body) AS bytes)
         SELECT count(*) AS n, coalesce(sum(bytes), 0) AS bytes FROM gone`,
        [queueId],
      ))!;
      const found = await tx.row(
        "UPDATE queues.queues SET purged_at = $3, backlog_messages = backlog_messages - $4, backlog_bytes = backlog_bytes - $5 WHERE account_id = $1 AND id = $2 RETURNING 1",
        [accountId, queueId, startedAtMs, gone.n, gone.bytes],
      );
      if (!found) throw QueuesErrors.queueNotFound();
      return Number(gone.n);
    });
  }

  async lastPurge(accountId: string, queueId: string): Promise<number | null> {
    const row = await this.pg.row<{ purged_at: string | null }>("SELECT purged_at FROM queues.queues WHERE account_id = $1 AND id = $2", [accountId, queueId]);
    if (!row) throw QueuesErrors.queueNotFound();
    return row.purged_at === null ? null : Number(row.purged_at);
  }

  async enqueue(queueId: string, messages: readonly NewMessage[], maxBacklogBytes: number): Promise<void> {
    if (messages.length === 0) return;
    const now = Date.now();
    const bytes = bodyBytes(messages);
    // One statement: the counters grow only where the cap allows, and the messages go in only where they grew.
    const inserted = await this.pg.execute(
      `WITH room AS (
         UPDATE queues.queues SET backlog_messages = backlog_messages + $7, backlog_bytes = backlog_bytes + $8
         WHERE id = $1 AND backlog_bytes + $8 <= $9 RETURNING id, delivery_delay
       )
       INSERT INTO queues.messages (id, queue_id, body, content_type, sent_at, visible_at)
       SELECT m.id, room.id, m.body, m.content_type, $2, $2 + coalesce(m.delay, room.delivery_delay) * 1000
       FROM room, unnest($3::text[], $4::bytea[], $5::text[], $6::bigint[]) AS m(id, body, content_type, delay)`,
      [
        queueId,
        now,
        messages.map(() => newId()),
        messages.map((m) => m.body),
        messages.map((m) => m.contentType),
        messages.map((m) => m.delaySeconds ?? null),
        messages.length,
        bytes,
        maxBacklogBytes,
      ],
    );
    if (inserted > 0) return;
    if (!(await this.pg.row("SELECT 1 FROM queues.queues WHERE id = $1", [queueId]))) throw QueuesErrors.queueNotFound();
    throw QueuesErrors.backlogFull(maxBacklogBytes);
  }

  async backlog(queueId: string): Promise<Backlog> {
    return backlogOf(await this.pg.row<CounterRow>("SELECT backlog_messages, backlog_bytes FROM queues.queues WHERE id = $1", [queueId]));
  }

  async backlogTotals(): Promise<Backlog & { queues: number }> {
    const r = (await this.pg.row<{ queues: string; messages: string; bytes: string }>(
      "SELECT count(*) AS queues, coalesce(sum(backlog_messages), 0) AS messages, coalesce(sum(backlog_bytes), 0) AS bytes FROM queues.queues",
    ))!;
    return { queues: Number(r.queues), messages: Number(r.messages), bytes: Number(r.bytes) };
  }

  async stats(queueId: string, nowMs: number): Promise<QueueStats> {
    const r = (await this.pg.row<{ sent: string | null; ready: string; oldest: string | null } & CounterRow>(
      // Deliverable: visible, not past the retention period, the queue not paused (as lease picks them).
      `SELECT m.*, q.backlog_messages, q.backlog_bytes
       FROM (SELECT min(m.sent_at) AS sent, count(*) FILTER (WHERE d) AS ready, min(m.visible_at) FILTER (WHERE d) AS oldest
             FROM (SELECT m.sent_at, m.visible_at, (m.visible_at <= $2 AND m.sent_at > $2::bigint - q.message_retention_period * 1000 AND NOT q.delivery_paused) AS d
                   FROM queues.messages m JOIN queues.queues q ON q.id = m.queue_id WHERE m.queue_id = $1) m) m
       LEFT JOIN queues.queues q ON q.id = $1`,
      [queueId, nowMs],
    ))!;
    return queueStats(r, backlogOf(r));
  }

  async lease(queueId: string, max: number, leaseMs: number, nowMs: number): Promise<LeasedMessage[]> {
    const rows = await this.pg.rows<{ seq: string; id: string; body: Buffer; content_type: string; attempts: number; sent_at: string; lease_id: string }>(
      `WITH picked AS (
         SELECT m.seq FROM queues.messages m JOIN queues.queues q ON q.id = m.queue_id
         WHERE m.queue_id = $1 AND m.visible_at <= $2 AND m.sent_at > $2::bigint - q.message_retention_period * 1000 AND NOT q.delivery_paused
         ORDER BY m.visible_at, m.seq LIMIT $3 FOR UPDATE OF m SKIP LOCKED
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
      // What each queue's counters change by, applied once the messages are written (lock order: see the class).
      const changes = new Map<string, Backlog>();
      const change = (id: string, messages: number, bytes: number) => {
        const c = changes.get(id) ?? { messages: 0, bytes: 0 };
        changes.set(id, { messages: c.messages + messages, bytes: c.bytes + bytes });
      };
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
        change(queueId, -1, -gone.body.length);
        if (s.action === "dead-letter") {
          const now = Date.now();
          const moved = await tx.execute(
            "INSERT INTO queues.messages (id, queue_id, body, content_type, sent_at, visible_at) SELECT $1, id, $2, $3, $4, $4 FROM queues.queues WHERE id = $5",
            [newId(), gone.body, gone.content_type, now, s.toQueueId],
          );
          if (moved > 0) change(s.toQueueId, 1, gone.body.length);
        }
      }
      for (const id of [...changes.keys()].sort()) {
        const c = changes.get(id)!;
        await tx.execute("UPDATE queues.queues SET backlog_messages = backlog_messages + $2, backlog_bytes = backlog_bytes + $3 WHERE id = $1", [
          id,
          c.messages,
          c.bytes,
        ]);
      }
      return n;
    });
  }

  async sweepExpired(nowMs: number, max: number): Promise<number> {
    // One statement: the expired messages no other node has locked are deleted, and the counters go down by what
    // this statement deleted (a message another sweep or a settlement deleted first is not returned here), so two
    // nodes sweeping at once never count one twice. Messages are locked before queue rows, and those in id order, as
    // settle does.
    const row = await this.pg.row<{ n: string }>(
      `WITH picked AS (
         SELECT m.seq FROM queues.queues q JOIN queues.messages m ON m.queue_id = q.id
         WHERE m.sent_at <= $1::bigint - q.message_retention_period * 1000 LIMIT $2 FOR UPDATE OF m SKIP LOCKED
       ), gone AS (
         DELETE FROM queues.messages m USING picked WHERE m.seq = picked.seq RETURNING m.queue_id, length(m.body) AS bytes
       ), per_queue AS (
         SELECT queue_id, count(*) AS n, sum(bytes) AS bytes FROM gone GROUP BY queue_id
       ), locked AS (
         -- The queue rows in id order, as settle takes them.
         SELECT id FROM queues.queues WHERE id IN (SELECT queue_id FROM per_queue) ORDER BY id FOR UPDATE
       ), counted AS (
         UPDATE queues.queues q SET backlog_messages = q.backlog_messages - per_queue.n, backlog_bytes = q.backlog_bytes - per_queue.bytes
         FROM per_queue JOIN locked ON locked.id = per_queue.queue_id WHERE q.id = per_queue.queue_id RETURNING per_queue.n
       )
       SELECT coalesce(sum(n), 0) AS n FROM counted`,
      [nowMs, max],
    );
    return Number(row!.n);
  }
}
