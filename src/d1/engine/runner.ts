import type { Db } from "../../core/db/sqlite.js";
import { D1_LIMITS } from "../limits.js";
import type { D1Value, PlannedStatement } from "./plan.js";

/** What D1 answers about each statement (the hosted API's `meta`, less the fields of its replicas). */
export interface D1Meta {
  served_by: string;
  served_by_primary: true;
  duration: number;
  changes: number;
  last_row_id: number;
  changed_db: boolean;
  size_after: number;
  /** Rows the statement returned (SQLite does not count the rows it scanned for us). */
  rows_read: number;
  /** Rows it changed. */
  rows_written: number;
}

/** One statement's answer, rows as arrays; the routes and the binding shape it as their client expects. */
export interface StatementResult {
  columns: string[];
  rows: D1Value[][];
  meta: D1Meta;
}

/** Why a request failed: SQLite refused a statement (its message), or the results outgrew the budget. */
export class RunFailure extends Error {
  constructor(
    readonly kind: "sql" | "tooLarge",
    message: string,
  ) {
    super(message);
  }
}

export const SERVED_BY = "edge-platform-d1";

/** The settings an executor gives every database connection it opens (the statement guard keeps scripts from changing them). */
export function configureConnection(db: Db): void {
  db.pragma("busy_timeout = 5000");
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  db.pragma("foreign_keys = ON");
  db.pragma("trusted_schema = OFF");
  // Temporary storage in memory, bounded by the executor's memory cap, never in unlinked files no limit counts.
  db.pragma(`temp_store = ${D1_LIMITS.tempStore}`);
  const pageSize = db.pragma("page_size", { simple: true }) as number;
  db.pragma(`max_page_count = ${Math.floor(D1_LIMITS.databaseBytes / pageSize)}`);
}

/**
 * Runs `statements` in one transaction on `db`: all of them or, on the first failure, none (the transaction is
 * rolled back and the failure thrown as a RunFailure with SQLite's message).
 */
export function runStatements(db: Db, statements: readonly PlannedStatement[]): StatementResult[] {
  const counters = db.prepare("SELECT total_changes() AS total, last_insert_rowid() AS rowid");
  let budget = D1_LIMITS.resultBytes;
  const run = db.transaction(() =>
    statements.map((s): StatementResult => {
      const started = performance.now();
      const before = counters.get() as { total: number; rowid: number };
      const stmt = db.prepare(s.sql);
      let columns: string[] = [];
      const rows: D1Value[][] = [];
      if (stmt.reader) {
        columns = stmt.columns().map((c) => c.name);
        for (const row of stmt.raw(true).iterate(s.params) as Iterable<unknown[]>) {
          const converted = row.map(toD1Value);
          budget -= sizeOf(converted);
          if (budget < 0) throw new RunFailure("tooLarge", "result too large");
          rows.push(converted);
        }
      } else stmt.run(s.params);
      const after = counters.get() as { total: number; rowid: number };
      const changes = after.total - before.total;
      return {
        columns,
        rows,
        meta: {
          served_by: SERVED_BY,
          served_by_primary: true,
          duration: performance.now() - started,
          changes,
          last_row_id: after.rowid,
          changed_db: changes > 0 || after.rowid !== before.rowid,
          size_after: 0,
          rows_read: rows.length,
          rows_written: changes,
        },
      };
    }),
  );
  let results: StatementResult[];
  try {
    results = run.deferred();
  } catch (err) {
    throw asRunFailure(err);
  }
  const size = databaseSize(db);
  for (const r of results) r.meta.size_after = size;
  return results;
}

/** Bytes the database file holds (pages in use or free). */
export function databaseSize(db: Db): number {
  return (db.pragma("page_count", { simple: true }) as number) * (db.pragma("page_size", { simple: true }) as number);
}

/** SQLite's refusals as the hosted D1 words them ("no such table: t: SQLITE_ERROR"); anything else is a bug, thrown on. */
export function asRunFailure(err: unknown): unknown {
  if (err instanceof RunFailure) return err;
  const e = err as { code?: unknown; message?: unknown; name?: unknown };
  if (e?.name === "SqliteError" && typeof e.code === "string") return new RunFailure("sql", `${String(e.message)}: ${e.code}`);
  // better-sqlite3's own refusals of a statement (more than one statement, parameter counts) are TypeErrors/RangeErrors.
  if ((err instanceof TypeError || err instanceof RangeError) && typeof e.message === "string") return new RunFailure("sql", e.message);
  return err;
}

function toD1Value(v: unknown): D1Value {
  if (Buffer.isBuffer(v)) return Array.from(v);
  if (typeof v === "bigint") return Number(v);
  return v as D1Value;
}

/** About what `v` costs as JSON, to bound a request's results before they are serialized. */
function sizeOf(row: D1Value[]): number {
  let n = 2;
  for (const v of row) {
    if (typeof v === "string") n += v.length + 3;
    else if (Array.isArray(v)) n += v.length * 4 + 2;
    else n += 16;
  }
  return n;
}
