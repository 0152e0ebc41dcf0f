import type { Db } from "../../core/db/sqlite.js";
import { logOrderBy, logWhere } from "./sqlite-filter.js";
import { buildLogs } from "./draft.js";
import { type LogDraft } from "./store.js";
import type { PriceTable } from "../metering/prices.js";
import { BODY_COLUMNS, INSERT_COLUMNS, LOG_COLUMNS, rowValues, STATS_COLUMNS, toRecord, type LogRow as Row } from "./rows.js";
import { LogWriterThread } from "./sqlite-writer.js";
import type { LogCount, LogPatch, LogQuery, LogRecord, LogStats, LogStore, NewLog } from "./store.js";

/**
 * The smallest batch without limits that the writer thread writes; smaller ones are written here. Handing a batch
 * over costs this thread a copy and a wake-up of the other (tens of µs); writing it here costs a commit (~75 µs on
 * the benchmark VM) plus ~10 µs an insert, and since the logs are built where they are written, ~5 µs more a log.
 */
const THREAD_BATCH = 8;

/**
 * Logs per multi-row insert: one statement execution for this many rows instead of one each (the statement's
 * fixed cost per execution, and better-sqlite3's per call, are shared). More rows per statement gain little and
 * bind more parameters per call (29 a row; SQLite allows 32,766).
 */
export const ROWS_PER_INSERT = 8;

const INSERT = (rows: number) =>
  `INSERT INTO logs (${INSERT_COLUMNS.join(", ")}) VALUES ${Array(rows)
    .fill(`(${INSERT_COLUMNS.map(() => "?").join(", ")})`)
    .join(", ")}`;
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
  private readonly counts = new Map<string, number>();
  private readonly q;
  private readonly thread: LogWriterThread | undefined;
  private writeQueue: Promise<unknown> = Promise.resolve();
  /** Gateways ("account/gateway") whose log count the writer thread keeps. */
  private readonly threadCounts = new Set<string>();

  constructor(
    private readonly db: Db,
    opts: { writerThread?: boolean } = {},
  ) {
    this.thread = opts.writerThread ? new LogWriterThread(db) : undefined;
    this.q = {
      insert: db.prepare(INSERT(1)),
      insertMany: db.prepare(INSERT(ROWS_PER_INSERT)),
      count: db.prepare("SELECT count(*) AS n FROM logs WHERE account_id = ? AND gateway_id = ?"),
      trim: db.prepare("DELETE FROM logs WHERE seq IN (SELECT seq FROM logs WHERE account_id = ? AND gateway_id = ? ORDER BY seq LIMIT ?)"),
      get: db.prepare(`${SELECT} WHERE account_id = ? AND gateway_id = ? AND id = ?`),
      exists: db.prepare("SELECT 1 FROM logs WHERE account_id = ? AND gateway_id = ? AND id = ?"),
      deleteAll: db.prepare("DELETE FROM logs WHERE account_id = ? AND gateway_id = ?"),
    };
  }

  private countOf(accountId: string, gatewayId: string, key: string): number {
    let n = this.counts.get(key);
    if (n === undefined) {
      n = (this.q.count.get(accountId, gatewayId) as { n: number }).n;
      this.counts.set(key, n);
    }
    return n;
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
    const key = `${accountId}/${gatewayId}`;
    this.counts.delete(key);
    if (this.threadCounts.delete(key)) this.thread!.forget(accountId, gatewayId);
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
  appendDrafts(batch: readonly LogDraft[], prices: PriceTable): Promise<LogCount[]> {
    if (this.forThread(batch)) return this.onThread((thread) => thread.appendDrafts(batch, prices));
    return this.here(() => buildLogs(batch, prices));
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
      return this.appendHere(batch);
    });
  }

  private async appendHere(batch: readonly NewLog[]): Promise<LogCount[]> {
    const limited = new Map<string, NewLog>();
    // Logs without a limit are inserted ROWS_PER_INSERT at a time, in batch order: those waiting are inserted before
    // a log with a limit is looked at (its count, and the trim after it, follow the rows before it).
    const waiting: NewLog[] = [];
    try {
      this.db.transaction(() => {
        for (const l of batch) {
          const key = `${l.account_id}/${l.gateway_id}`;
          if (l.limit === null) {
            if (waiting.push(l) === ROWS_PER_INSERT) this.insertRows(waiting);
            const n = this.counts.get(key);
            if (n !== undefined) this.counts.set(key, n + 1);
            continue;
          }
          this.insertRows(waiting);
          limited.set(key, l);
          const n = this.countOf(l.account_id, l.gateway_id, key);
          if (l.strategy !== "DELETE_OLDEST" && n >= l.limit) continue;
          this.q.insert.run(rowValues(l));
          let after = n + 1;
          if (after > l.limit) {
            this.q.trim.run(l.account_id, l.gateway_id, after - l.limit);
            after = l.limit;
          }
          this.counts.set(key, after);
        }
        this.insertRows(waiting);
      })();
    } catch (err) {
      // The counts moved with rows that were rolled back.
      this.counts.clear();
      throw err;
    }
    return [...limited].map(([key, l]) => ({ account_id: l.account_id, gateway_id: l.gateway_id, count: this.counts.get(key)! }));
  }

  /** Inserts `logs` (a full multi-row insert's worth, or fewer one by one) and empties the array. */
  private insertRows(logs: NewLog[]): void {
    if (logs.length === ROWS_PER_INSERT) {
      const values = new Array<unknown>(ROWS_PER_INSERT * INSERT_COLUMNS.length);
      let at = 0;
      for (const l of logs) for (const v of rowValues(l)) values[at++] = v;
      this.q.insertMany.run(values);
    } else for (const l of logs) this.q.insert.run(rowValues(l));
    logs.length = 0;
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
    return this.countOf(accountId, gatewayId, `${accountId}/${gatewayId}`);
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
