import { randomBytes } from "node:crypto";
import type { Db } from "../core/db/sqlite.js";
import { QueuesErrors } from "./errors.js";
import { QUEUE_DEFAULTS, QUEUES_LIMITS } from "./limits.js";
import type {
  Backlog,
  ConsumerInput,
  ConsumerRecord,
  ContentType,
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

export const newId = () => randomBytes(16).toString("hex");
const isUniqueViolation = (err: unknown) => (err as { code?: string }).code === "SQLITE_CONSTRAINT_UNIQUE";

const CONSUMER_SELECT = `SELECT c.*, q.name AS queue_name, q.account_id FROM consumers c JOIN queues q ON q.id = c.queue_id`;

interface MessageRow {
  id: string;
  body: Buffer;
  content_type: string;
  attempts: number;
  sent_at: number;
}

/** QueuesStore on one SQLite file (db/queues.sqlite); each method is one transaction. */
export class SqliteQueuesStore implements QueuesStore {
  constructor(private readonly db: Db) {}

  async createQueue(accountId: string, name: string, settings: Partial<QueueSettings> = {}): Promise<QueueRecord> {
    checkQueueName(name);
    const now = Date.now();
    const s = { ...QUEUE_DEFAULTS, ...settings };
    const row: QueueRow = { id: newId(), name, created_on: now, modified_on: now, ...s };
    this.db.transaction(() => {
      const { n } = this.db.prepare("SELECT count(*) AS n FROM queues WHERE account_id = ?").get(accountId) as { n: number };
      if (n >= QUEUES_LIMITS.queuesPerAccount) throw QueuesErrors.tooManyQueues();
      try {
        this.db
          .prepare(
            `INSERT INTO queues (id, account_id, name, created_on, modified_on, delivery_delay, delivery_paused, message_retention_period)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
          )
          .run(row.id, accountId, name, now, now, s.delivery_delay, s.delivery_paused ? 1 : 0, s.message_retention_period);
      } catch (err) {
        if (isUniqueViolation(err)) throw QueuesErrors.nameTaken(name);
        throw err;
      }
    })();
    return queueRecord(row);
  }

  async listQueues(accountId: string, opts: { names?: readonly string[]; offset?: number; limit?: number } = {}) {
    const names = opts.names ? JSON.stringify(opts.names) : null;
    const where = "account_id = ? AND (? IS NULL OR name IN (SELECT value FROM json_each(?)))";
    const rows = this.db
      .prepare(`SELECT * FROM queues WHERE ${where} ORDER BY created_on, id LIMIT ? OFFSET ?`)
      .all(accountId, names, names, opts.limit ?? -1, opts.offset ?? 0) as QueueRow[];
    const { n } = this.db.prepare(`SELECT count(*) AS n FROM queues WHERE ${where}`).get(accountId, names, names) as { n: number };
    return { queues: rows.map(queueRecord), total: n };
  }

  async getQueue(accountId: string, queueId: string): Promise<QueueRecord | undefined> {
    const row = this.db.prepare("SELECT * FROM queues WHERE account_id = ? AND id = ?").get(accountId, queueId) as QueueRow | undefined;
    return row && queueRecord(row);
  }

  async getQueueByName(accountId: string, name: string): Promise<QueueRecord | undefined> {
    const row = this.db.prepare("SELECT * FROM queues WHERE account_id = ? AND name = ?").get(accountId, name) as QueueRow | undefined;
    return row && queueRecord(row);
  }

  async updateQueue(accountId: string, queueId: string, change: { name?: string; settings?: Partial<QueueSettings> }): Promise<QueueRecord> {
    if (change.name !== undefined) checkQueueName(change.name);
    const s = change.settings ?? {};
    const paused = s.delivery_paused === undefined ? null : s.delivery_paused ? 1 : 0;
    try {
      // A column given as null keeps its value.
      const changed = this.db
        .prepare(
          `UPDATE queues SET name = coalesce(?, name), delivery_delay = coalesce(?, delivery_delay), delivery_paused = coalesce(?, delivery_paused),
             message_retention_period = coalesce(?, message_retention_period), modified_on = ?
           WHERE account_id = ? AND id = ?`,
        )
        .run(change.name ?? null, s.delivery_delay ?? null, paused, s.message_retention_period ?? null, Date.now(), accountId, queueId);
      if (changed.changes === 0) throw QueuesErrors.queueNotFound();
    } catch (err) {
      if (isUniqueViolation(err)) throw QueuesErrors.nameTaken(change.name ?? "");
      throw err;
    }
    return (await this.getQueue(accountId, queueId))!;
  }

  async deleteQueue(accountId: string, queueId: string): Promise<void> {
    // Its messages and counters go with the row (ON DELETE CASCADE).
    if (this.db.prepare("DELETE FROM queues WHERE account_id = ? AND id = ?").run(accountId, queueId).changes === 0) throw QueuesErrors.queueNotFound();
  }

  private queueOf(accountId: string, queueId: string): void {
    if (!this.db.prepare("SELECT 1 FROM queues WHERE account_id = ? AND id = ?").get(accountId, queueId)) throw QueuesErrors.queueNotFound();
  }

  private consumer(consumerId: string): ConsumerRecord {
    return consumerRecord(this.db.prepare(`${CONSUMER_SELECT} WHERE c.id = ?`).get(consumerId) as ConsumerRow);
  }

  async addConsumer(accountId: string, queueId: string, input: ConsumerInput): Promise<ConsumerRecord> {
    const id = newId();
    this.db.transaction(() => {
      this.queueOf(accountId, queueId);
      try {
        this.db
          .prepare("INSERT INTO consumers (id, queue_id, type, script_name, settings, dead_letter_queue, created_on) VALUES (?, ?, ?, ?, ?, ?, ?)")
          .run(id, queueId, ...consumerColumns(input), Date.now());
      } catch (err) {
        if (isUniqueViolation(err)) throw QueuesErrors.oneWorkerConsumer();
        throw err;
      }
    })();
    return this.consumer(id);
  }

  async updateConsumer(accountId: string, queueId: string, consumerId: string, input: ConsumerInput): Promise<ConsumerRecord> {
    this.queueOf(accountId, queueId);
    const changed = this.db
      .prepare("UPDATE consumers SET type = ?, script_name = ?, settings = ?, dead_letter_queue = ? WHERE id = ? AND queue_id = ?")
      .run(...consumerColumns(input), consumerId, queueId);
    if (changed.changes === 0) throw QueuesErrors.consumerNotFound();
    return this.consumer(consumerId);
  }

  async listConsumers(accountId: string, queueId: string): Promise<ConsumerRecord[]> {
    this.queueOf(accountId, queueId);
    return (this.db.prepare(`${CONSUMER_SELECT} WHERE c.queue_id = ? ORDER BY c.created_on`).all(queueId) as ConsumerRow[]).map(consumerRecord);
  }

  async deleteConsumer(accountId: string, queueId: string, consumerId: string): Promise<void> {
    this.queueOf(accountId, queueId);
    if (this.db.prepare("DELETE FROM consumers WHERE id = ? AND queue_id = ?").run(consumerId, queueId).changes === 0) throw QueuesErrors.consumerNotFound();
  }

  async workerConsumers(): Promise<WorkerConsumer[]> {
    const rows = this.db.prepare(`${CONSUMER_SELECT} WHERE c.type = 'worker' ORDER BY c.created_on`).all() as ConsumerRow[];
    return rows.map((r) => ({ ...consumerRecord(r), account_id: r.account_id, script_name: r.script_name! }));
  }

  async consumersOfScript(accountId: string, scriptName: string): Promise<ConsumerRecord[]> {
    const rows = this.db
      .prepare(`${CONSUMER_SELECT} WHERE q.account_id = ? AND c.type = 'worker' AND c.script_name = ? ORDER BY c.created_on`)
      .all(accountId, scriptName) as ConsumerRow[];
    return rows.map(consumerRecord);
  }

  async deleteConsumersOfScript(accountId: string, scriptName: string): Promise<number> {
    return this.db
      .prepare("DELETE FROM consumers WHERE type = 'worker' AND script_name = ? AND queue_id IN (SELECT id FROM queues WHERE account_id = ?)")
      .run(scriptName, accountId).changes;
  }

  async purge(accountId: string, queueId: string, startedAtMs: number): Promise<number> {
    return this.db.transaction(() => {
      this.queueOf(accountId, queueId);
      this.db.prepare("UPDATE queues SET purged_at = ?, backlog_messages = 0, backlog_bytes = 0 WHERE id = ?").run(startedAtMs, queueId);
      return this.db.prepare("DELETE FROM messages WHERE queue_id = ?").run(queueId).changes;
    })();
  }

  async lastPurge(accountId: string, queueId: string): Promise<number | null> {
    const row = this.db.prepare("SELECT purged_at FROM queues WHERE account_id = ? AND id = ?").get(accountId, queueId) as
      { purged_at: number | null } | undefined;
    if (!row) throw QueuesErrors.queueNotFound();
    return row.purged_at;
  }

  async enqueue(queueId: string, messages: readonly NewMessage[], maxBacklogBytes: number): Promise<void> {
    if (messages.length === 0) return;
    const now = Date.now();
    const bytes = bodyBytes(messages);
    const insert = this.db.prepare("INSERT INTO messages (id, queue_id, body, content_type, sent_at, visible_at) VALUES (?, ?, ?, ?, ?, ?)");
    this.db.transaction(() => {
      const room = this.db
        .prepare("UPDATE queues SET backlog_messages = backlog_messages + ?, backlog_bytes = backlog_bytes + ? WHERE id = ? AND backlog_bytes + ? <= ?")
        .run(messages.length, bytes, queueId, bytes, maxBacklogBytes);
      if (room.changes === 0) {
        if (!this.db.prepare("SELECT 1 FROM queues WHERE id = ?").get(queueId)) throw QueuesErrors.queueNotFound();
        throw QueuesErrors.backlogFull(maxBacklogBytes);
      }
      const { delivery_delay } = this.db.prepare("SELECT delivery_delay FROM queues WHERE id = ?").get(queueId) as { delivery_delay: number };
      for (const m of messages) insert.run(newId(), queueId, m.body, m.contentType, now, now + (m.delaySeconds ?? delivery_delay) * 1000);
    })();
  }

  async backlog(queueId: string): Promise<Backlog> {
    const r = this.db.prepare("SELECT backlog_messages, backlog_bytes FROM queues WHERE id = ?").get(queueId) as CounterRow | undefined;
    return backlogOf(r);
  }

  async backlogTotals(): Promise<Backlog & { queues: number }> {
    const r = this.db
      .prepare("SELECT count(*) AS queues, coalesce(sum(backlog_messages), 0) AS messages, coalesce(sum(backlog_bytes), 0) AS bytes FROM queues")
      .get() as {
      queues: number;
      messages: number;
      bytes: number;
    };
    return { queues: r.queues, messages: r.messages, bytes: r.bytes };
  }

  async stats(queueId: string, nowMs: number): Promise<QueueStats> {
    return this.db.transaction(() => {
      // Deliverable: visible, not past the retention period, the queue not paused (as lease picks them).
      const r = this.db
        .prepare(
          `WITH q AS (SELECT ? - message_retention_period * 1000 AS expired, delivery_paused AS paused FROM queues WHERE id = ?)
           SELECT min(sent_at) AS sent, coalesce(sum(d), 0) AS ready, min(CASE WHEN d THEN visible_at END) AS oldest
           FROM (SELECT m.sent_at, m.visible_at, (m.visible_at <= ? AND m.sent_at > q.expired AND NOT q.paused) AS d FROM messages m, q WHERE m.queue_id = ?)`,
        )
        .get(nowMs, queueId, nowMs, queueId) as { sent: number | null; ready: number; oldest: number | null };
      const counters = this.db.prepare("SELECT backlog_messages, backlog_bytes FROM queues WHERE id = ?").get(queueId) as CounterRow | undefined;
      return queueStats(r, backlogOf(counters));
    })();
  }

  async lease(queueId: string, max: number, leaseMs: number, nowMs: number): Promise<LeasedMessage[]> {
    return this.db.transaction(() => {
      const rows = this.db
        .prepare(
          `SELECT m.id, m.body, m.content_type, m.attempts, m.sent_at FROM messages m JOIN queues q ON q.id = m.queue_id
           WHERE m.queue_id = ? AND m.visible_at <= ? AND m.sent_at > ? - q.message_retention_period * 1000 AND NOT q.delivery_paused
           ORDER BY m.visible_at, m.seq LIMIT ?`,
        )
        .all(queueId, nowMs, nowMs, max) as MessageRow[];
      const update = this.db.prepare("UPDATE messages SET attempts = attempts + 1, visible_at = ?, lease_id = ? WHERE id = ?");
      return rows.map((r) => {
        const leaseId = newId();
        update.run(nowMs + leaseMs, leaseId, r.id);
        return leased({ ...r, attempts: r.attempts + 1 }, leaseId);
      });
    })();
  }

  async settle(queueId: string, settlements: readonly Settlement[]): Promise<number> {
    const held = this.db.prepare("SELECT id, body, content_type FROM messages WHERE id = ? AND queue_id = ? AND lease_id = ?");
    const remove = this.db.prepare("DELETE FROM messages WHERE id = ?");
    const retry = this.db.prepare("UPDATE messages SET visible_at = ?, lease_id = NULL WHERE id = ?");
    const move = this.db.prepare(
      "INSERT INTO messages (id, queue_id, body, content_type, sent_at, visible_at) SELECT ?, q.id, ?, ?, ?, ? FROM queues q WHERE q.id = ?",
    );
    const count = this.db.prepare("UPDATE queues SET backlog_messages = backlog_messages + ?, backlog_bytes = backlog_bytes + ? WHERE id = ?");
    return this.db.transaction(() => {
      let n = 0;
      for (const s of settlements) {
        const row = held.get(s.id, queueId, s.leaseId) as { id: string; body: Buffer; content_type: string } | undefined;
        if (!row) continue;
        n++;
        if (s.action === "retry") {
          retry.run(s.visibleAtMs, s.id);
          continue;
        }
        if (s.action === "dead-letter") {
          const now = Date.now();
          if (move.run(newId(), row.body, row.content_type, now, now, s.toQueueId).changes > 0) count.run(1, row.body.length, s.toQueueId);
        }
        remove.run(s.id);
        count.run(-1, -row.body.length, queueId);
      }
      return n;
    })();
  }

  async sweepExpired(nowMs: number, max: number): Promise<number> {
    // Per queue, the index on (queue_id, sent_at) finds its expired messages without reading the others.
    const pick = this.db.prepare(
      `SELECT m.seq, m.queue_id, length(m.body) AS bytes FROM queues q JOIN messages m ON m.queue_id = q.id
       WHERE m.sent_at <= ? - q.message_retention_period * 1000 LIMIT ?`,
    );
    const remove = this.db.prepare("DELETE FROM messages WHERE seq = ?");
    const count = this.db.prepare("UPDATE queues SET backlog_messages = backlog_messages - ?, backlog_bytes = backlog_bytes - ? WHERE id = ?");
    return this.db.transaction(() => {
      const rows = pick.all(nowMs, max) as { seq: number; queue_id: string; bytes: number }[];
      const changes = new Map<string, Backlog>();
      for (const r of rows) {
        remove.run(r.seq);
        const c = changes.get(r.queue_id) ?? { messages: 0, bytes: 0 };
        changes.set(r.queue_id, { messages: c.messages + 1, bytes: c.bytes + r.bytes });
      }
      for (const [id, c] of changes) count.run(c.messages, c.bytes, id);
      return rows.length;
    })();
  }
}

/** A queue row's backlog counters as both stores select them (PostgreSQL's BIGINT comes as a string). */
export interface CounterRow {
  backlog_messages: number | string | null;
  backlog_bytes: number | string | null;
}

/** The counters of a queue row, zero when the queue is gone. */
export const backlogOf = (r: CounterRow | undefined): Backlog => ({
  messages: Number(r?.backlog_messages ?? 0),
  bytes: Number(r?.backlog_bytes ?? 0),
});

/** The bytes a batch adds to a backlog: its bodies'. */
export const bodyBytes = (messages: readonly NewMessage[]): number => messages.reduce((n, m) => n + m.body.length, 0);

/** The stats of a queue from the aggregates both stores select and its counters. */
export const queueStats = (
  r: {
    sent: number | string | null;
    ready: number | string | null;
    oldest: number | string | null;
  },
  counters: Backlog,
): QueueStats => ({
  backlog: counters.messages,
  backlogBytes: counters.bytes,
  ready: Number(r.ready ?? 0),
  ...(r.sent !== null ? { oldestSentAtMs: Number(r.sent) } : {}),
  ...(r.oldest !== null ? { oldestReadyAtMs: Number(r.oldest) } : {}),
});

/** A leased row as a LeasedMessage (`attempts` counting this delivery). */
export const leased = (
  r: { id: string; body: Buffer; content_type: string; attempts: number | string; sent_at: number | string },
  leaseId: string,
): LeasedMessage => ({
  id: r.id,
  body: r.body,
  contentType: r.content_type as ContentType,
  attempts: Number(r.attempts),
  timestampMs: Number(r.sent_at),
  leaseId,
});
