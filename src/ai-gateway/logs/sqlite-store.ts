import type { Db } from "../../core/db/sqlite.js";
import { logOrderBy, logWhere } from "./sqlite-filter.js";
import { buildLogs } from "./draft.js";
import { type LogDraft } from "./store.js";
import type { PriceTable } from "../metering/prices.js";
import { SqliteLogAppender } from "./sqlite-appender.js";
import { BODY_COLUMNS, LOG_COLUMNS, STATS_COLUMNS, toRecord, type LogRow as Row } from "./rows.js";
import { LogWriterThread } from "./sqlite-log-writer.js";
import type { LogCount, LogPatch, LogQuery, LogRecord, LogStats, LogStore, NewLog } from "./store.js";

/**
 * The smallest batch without limits that the writer thread writes; smaller ones are written here. Handing a batch
 * over costs this thread a copy and a wake-up of the other (tens of µs); writing it here costs a commit (~75 µs on
 * the benchmark VM) plus ~10 µs an insert, and since the logs are built where they are written, ~5 µs more a log.
 */
const THREAD_BATCH = 8;

const SELECT = `SELECT ${LOG_COLUMNS} FROM logs`;
const STATS = `SELECT ${STATS_COLUMNS} FROM logs`;

/**
 * Logs in the `logs` table, bodies in their row. Log counts of gateways with a limit are counted once and then
 * kept up to date where logs are added, so a batch does not count a large table again.
 *
 * With `writerThread`, large batches (and every log with a limit) are written by a thread of their own
 * (sqlite-log-writer.ts), which then keeps those counts; reads and small batches stay here. Every write to the file from this connection (the log API's patches and deletes, the
 * gateway store's changes) takes its turn with the thread's batches (`exclusive`), so neither side ever waits for
 * the other in SQLite's busy handler.
 */
export class SqliteLogStore implements LogStore {
  private readonly appender: SqliteLogAppender;
  private readonly q;
  private readonly thread: LogWriterThread | undefined;
  private writeQueue: Promise<unknown> = Promise.resolve();
  /** Gateways ("account/gateway") whose log count the writer thread keeps. */
  private readonly threadCounts = new Set<string>();

  constructor(
    private readonly db: Db,
    /** Prices the logs built from drafts (appendDrafts), here or on the writer thread. */
    private readonly prices: PriceTable,
    opts: { writerThread?: boolean } = {},
  ) {
    this.thread = opts.writerThread ? new LogWriterThread(db, prices) : undefined;
    this.appender = new SqliteLogAppender(db);
    this.q = {
      get: db.prepare(`${SELECT} WHERE account_id = ? AND gateway_id = ? AND id = ?`),
      exists: db.prepare("SELECT 1 FROM logs WHERE account_id = ? AND gateway_id = ? AND id = ?"),
      deleteAll: db.prepare("DELETE FROM logs WHERE account_id = ? AND gateway_id = ?"),
    };
  }

  /**
   * Runs `fn` (a write to this file) once the writes before it, the writer thread's batches included, are done.
   */
  exclusive<T>(fn: () => T | Promise<T>): Promise<T> {
    const run = this.writeQueue.then(fn);
    this.writeQueue = run.catch(() => undefined);
    return run;
  }

  /** After logs of a gateway were deleted, or written here while the writer thread keeps its count: it is read again when next needed. */
  forgetCount(accountId: string, gatewayId: string): void {
    this.appender.forgetCount(accountId, gatewayId);
    if (this.threadCounts.delete(`${accountId}/${gatewayId}`)) this.thread!.forget(accountId, gatewayId);
  }

  /** Ends the writer thread, if any, once what it was given is written. */
  async close(): Promise<void> {
    await this.exclusive(() => this.thread?.close());
  }

  append(batch: readonly NewLog[]): Promise<LogCount[]> {
    if (this.forThread(batch)) return this.onThread((thread) => thread.append(batch));
    return this.here(() => batch);
  }

  /** On the writer thread, the drafts are built there too; here, in this write turn. */
  appendDrafts(batch: readonly LogDraft[]): Promise<LogCount[]> {
    if (this.forThread(batch)) return this.onThread((thread) => thread.appendDrafts(batch));
    return this.here(() => buildLogs(batch, this.prices));
  }

  /**
   * Whether the writer thread takes a batch: all but the smallest, so that the event loop neither builds nor writes
   * logs once it is busy enough to fill a batch of THREAD_BATCH in the queue's 10 ms. Logs with a limit always go to
   * the thread, which keeps their counts.
   */
  private forThread(batch: readonly { limit: number | null }[]): boolean {
    return !!this.thread && (batch.length >= THREAD_BATCH || batch.some((l) => l.limit !== null));
  }

  private onThread(write: (thread: LogWriterThread) => Promise<LogCount[]>): Promise<LogCount[]> {
    const thread = this.thread!;
    return this.exclusive(async () => {
      const counts = await write(thread);
      for (const c of counts) this.threadCounts.add(`${c.account_id}/${c.gateway_id}`);
      return counts;
    });
  }

  /** Writes on this connection, in its write turn, the batch `logs()` gives then. */
  private here(logs: () => readonly NewLog[]): Promise<LogCount[]> {
    return this.exclusive(() => {
      const batch = logs();
      // A gateway whose count the thread keeps gets logs written here (its limit was lifted): the thread counts again.
      if (this.threadCounts.size)
        for (const l of batch) if (this.threadCounts.has(`${l.account_id}/${l.gateway_id}`)) this.forgetCount(l.account_id, l.gateway_id);
      return this.appender.append(batch);
    });
  }

  async count(accountId: string, gatewayId: string): Promise<number> {
    if (this.thread) {
      const thread = this.thread;
      return this.exclusive(async () => {
        const n = await thread.count(accountId, gatewayId);
        this.threadCounts.add(`${accountId}/${gatewayId}`);
        return n;
      });
    }
    return this.appender.count(accountId, gatewayId);
  }

  async list(accountId: string, gatewayId: string, query: LogQuery): Promise<{ logs: LogRecord[]; stats: LogStats }> {
    const where = logWhere(accountId, gatewayId, query.filter);
    const rows = this.db
      .prepare(`${SELECT} WHERE ${where.sql} ORDER BY ${logOrderBy(query.order)} LIMIT ? OFFSET ?`)
      .all(...where.args, query.limit ?? -1, query.offset ?? 0) as Row[];
    const stats = this.db.prepare(`${STATS} WHERE ${where.sql}`).get(...where.args) as LogStats;
    return { logs: rows.map(toRecord), stats };
  }

  async get(accountId: string, gatewayId: string, logId: string): Promise<LogRecord | undefined> {
    const row = this.q.get.get(accountId, gatewayId, logId) as Row | undefined;
    return row && toRecord(row);
  }

  async body(accountId: string, gatewayId: string, logId: string, which: "request" | "response") {
    return this.db.prepare(`SELECT ${BODY_COLUMNS[which]} FROM logs WHERE account_id = ? AND gateway_id = ? AND id = ?`).get(accountId, gatewayId, logId) as
      { body: Buffer | null; contentType: string | null } | undefined;
  }

  async patch(accountId: string, gatewayId: string, logId: string, patch: LogPatch): Promise<boolean> {
    const sets: string[] = [];
    const args: unknown[] = [];
    if (patch.feedback !== undefined) (sets.push("feedback = ?"), args.push(patch.feedback));
    if (patch.score !== undefined) (sets.push("score = ?"), args.push(patch.score));
    if (patch.metadata !== undefined) (sets.push("metadata = ?"), args.push(patch.metadata === null ? null : JSON.stringify(patch.metadata)));
    if (!sets.length) return !!this.q.exists.get(accountId, gatewayId, logId);
    const update = this.db.prepare(`UPDATE logs SET ${sets.join(", ")} WHERE account_id = ? AND gateway_id = ? AND id = ?`);
    const r = await this.exclusive(() => update.run(...args, accountId, gatewayId, logId));
    return r.changes > 0;
  }

  async delete(accountId: string, gatewayId: string, query: LogQuery): Promise<number> {
    const where = logWhere(accountId, gatewayId, query.filter);
    // SQLite takes a LIMIT up to 2^63 - 1 (-1: none); a safe integer always fits.
    const del = this.db.prepare(`DELETE FROM logs WHERE seq IN (SELECT seq FROM logs WHERE ${where.sql} ORDER BY ${logOrderBy(query.order)} LIMIT ?)`);
    // The count is forgotten in the same turn, so the thread hears of it before its next batch.
    const r = await this.exclusive(() => {
      const done = del.run(...where.args, query.limit ?? -1);
      this.forgetCount(accountId, gatewayId);
      return done;
    });
    return r.changes;
  }

  /**
   * Deletes every log of a gateway (inside the gateway store's transaction that deletes the gateway, in its write
   * turn, which then calls forgetCount).
   */
  deleteAllOf(accountId: string, gatewayId: string): void {
    this.q.deleteAll.run(accountId, gatewayId);
  }
}
