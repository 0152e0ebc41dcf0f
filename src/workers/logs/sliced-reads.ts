import type { EventQuery, KeysQuery, Sql, ValuesQuery } from "./query.js";
import { SCAN_ROWS, toEvent, type EventRow } from "./rows.js";
import { keysOf, type readStatements } from "./statements.js";
import type { KeyInfo, LogEvent } from "./store.js";

/**
 * How a read walks an account's events, on either backend: slices of `sliceRows` rows of its timeframe (newest
 * first), the event loop yielded between them, and no more than `scanRows` rows in all. On SQLite reads run on the
 * main thread: one query whose filter matches nothing read the account's whole cap in one statement (500,000 events:
 * 3.6 s without an answer for any tenant, measured loaded). On PostgreSQL the same statement held a connection of the
 * shared pool and the server's CPU for as long, once per query a tenant repeats.
 */
export interface LogsReadBounds {
  sliceRows: number;
  scanRows: number;
}
export const LOGS_READ_BOUNDS: LogsReadBounds = { sliceRows: 5_000, scanRows: SCAN_ROWS };

/** How a backend runs a read statement (`?` placeholders, as readStatements writes them). */
export interface ReadRunner {
  all<T extends object>(s: Sql): Promise<T[]>;
  get<T extends object>(s: Sql): Promise<T | undefined>;
}

/** A timeframe's part a slice covers (both ends included). */
interface Slice {
  from: number;
  to: number;
}

/** The LogsStore reads (events, invocations, keys, values) in bounded slices, written once: both stores extend it. */
export class SlicedReads {
  constructor(
    private readonly read: ReturnType<typeof readStatements>,
    private readonly run: ReadRunner,
    private readonly bounds: LogsReadBounds = LOGS_READ_BOUNDS,
  ) {}

  /**
   * The account's rows of [from, to] in slices of about `sliceRows` (all rows of the oldest time of a slice are in
   * it), newest first, `scanRows` in all; the event loop is yielded before each slice after the first.
   */
  private async *slices(accountId: string, from: number, to: number): AsyncGenerator<Slice> {
    let upper = to;
    let examined = 0;
    while (upper >= from && examined < this.bounds.scanRows) {
      if (examined > 0) await new Promise((resolve) => setImmediate(resolve));
      const take = Math.min(this.bounds.sliceRows, this.bounds.scanRows - examined);
      const edge = await this.run.get<{ ts: number | string }>(this.read.sliceEdge(accountId, from, upper, take - 1));
      if (!edge) return yield { from, to: upper };
      const oldest = Number(edge.ts);
      yield { from: oldest, to: upper };
      examined += take;
      upper = oldest - 1;
    }
  }

  async events(accountId: string, q: EventQuery): Promise<{ events: LogEvent[]; count: number }> {
    const rows: EventRow[] = [];
    let n = 0;
    for await (const slice of this.slices(accountId, q.from, q.to)) {
      const part = { ...q, ...slice };
      if (rows.length < q.limit) rows.push(...(await this.run.all<EventRow>(this.read.events(accountId, { ...part, limit: q.limit - rows.length }))));
      n += Number((await this.run.get<{ n: number | string }>(this.read.count(accountId, part)))?.n ?? 0);
    }
    return { events: rows.map(toEvent), count: n };
  }

  async invocations(accountId: string, q: EventQuery): Promise<LogEvent[]> {
    const ids: string[] = [];
    const seen = new Set<string>();
    for await (const slice of this.slices(accountId, q.from, q.to)) {
      for (const r of await this.run.all<{ request_id: string }>(this.read.invocationIds(accountId, { ...q, ...slice, limit: q.limit - ids.length }))) {
        // An invocation whose events straddle two slices is named by both: once, at its newest.
        if (seen.has(r.request_id)) continue;
        seen.add(r.request_id);
        ids.push(r.request_id);
      }
      if (ids.length >= q.limit) break;
    }
    if (ids.length === 0) return [];
    return (await this.run.all<EventRow>(this.read.invocationEvents(accountId, ids))).map(toEvent);
  }

  async keys(accountId: string, q: KeysQuery): Promise<KeyInfo[]> {
    const newest: Record<string, number | string | null> = {};
    let columns: string[] = [];
    for await (const slice of this.slices(accountId, q.from, q.to)) {
      const keys = this.read.keys(accountId, { ...q, ...slice });
      columns = keys.columns;
      const row = (await this.run.get<Record<string, number | string | null>>(keys.sql)) ?? {};
      // Slices come newest first: a column's first value seen is its newest. (The aliases are k0, k1…: no request's names.)
      for (const [k, v] of Object.entries(row)) if (v !== null && (newest[k] ?? null) === null) newest[k] = v;
    }
    return keysOf(columns, newest);
  }

  async values(accountId: string, q: ValuesQuery): Promise<(string | number)[]> {
    const values: (string | number)[] = [];
    const seen = new Set<string | number>();
    for await (const slice of this.slices(accountId, q.from, q.to)) {
      for (const { v } of await this.run.all<{ v: string | number }>(this.read.values(accountId, { ...q, ...slice, limit: q.limit }))) {
        if (seen.has(v) || values.length >= q.limit) continue;
        seen.add(v);
        values.push(v);
      }
      if (values.length >= q.limit) break;
    }
    return values;
  }
}
