import type { Db } from "../../core/db/sqlite.js";
import { INSERT_COLUMNS, rowValues } from "./rows.js";
import type { LogCount, NewLog } from "./store.js";

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
/**
 * Writes batches of logs into the `logs` table on one connection, applying each log's gateway limit. Log counts of
 * gateways with a limit are counted once and then kept up to date where logs are added, so a batch does not count a
 * large table again. SqliteLogStore writes with one on its own connection; the writer thread
 * (sqlite-log-thread.ts) with one on the thread's.
 */
export class SqliteLogAppender {
  private readonly counts = new Map<string, number>();
  private readonly q;

  constructor(private readonly db: Db) {
    this.q = {
      insert: db.prepare(INSERT(1)),
      insertMany: db.prepare(INSERT(ROWS_PER_INSERT)),
      count: db.prepare("SELECT count(*) AS n FROM logs WHERE account_id = ? AND gateway_id = ?"),
      trim: db.prepare("DELETE FROM logs WHERE seq IN (SELECT seq FROM logs WHERE account_id = ? AND gateway_id = ? ORDER BY seq LIMIT ?)"),
    };
  }

  /** How many logs the gateway holds (counted once, then kept). */
  count(accountId: string, gatewayId: string): number {
    const key = `${accountId}/${gatewayId}`;
    let n = this.counts.get(key);
    if (n === undefined) {
      n = (this.q.count.get(accountId, gatewayId) as { n: number }).n;
      this.counts.set(key, n);
    }
    return n;
  }

  /** After logs of a gateway were deleted (or written elsewhere): its count is read again when next needed. */
  forgetCount(accountId: string, gatewayId: string): void {
    this.counts.delete(`${accountId}/${gatewayId}`);
  }

  /** Writes the batch in one transaction (LogStore.append); returns the counts of its gateways that have a limit. */
  append(batch: readonly NewLog[]): LogCount[] {
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
          const n = this.count(l.account_id, l.gateway_id);
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
}
