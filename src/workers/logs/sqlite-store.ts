import type { Db } from "../../core/db/sqlite.js";
import type { EventQuery, KeysQuery, ValuesQuery } from "./query.js";
import { INSERT_COLUMNS, insertValues, SCAN_ROWS, toEvent, type EventRow } from "./rows.js";
import type { ObservabilitySetting } from "./settings.js";
import { keysOf, readStatements } from "./statements.js";
import type { AccountCap, KeyInfo, LogEvent, LogsStore, NewLogEvent } from "./store.js";

/** Rows removed by one statement of a prune, so that a large one does not hold the event loop. */
const PRUNE_BATCH = 5_000;

/**
 * How a read walks an account's events: slices of `sliceRows` rows of its timeframe (newest first), the event loop
 * yielded between them, and no more than `scanRows` rows in all. Reads run on the main thread here: one query whose
 * filter matches nothing read the account's whole cap in one statement (500,000 events: 3.6 s without an answer for
 * any tenant, measured loaded).
 */
export interface LogsReadBounds {
  sliceRows: number;
  scanRows: number;
}
export const LOGS_READ_BOUNDS: LogsReadBounds = { sliceRows: 5_000, scanRows: SCAN_ROWS };

/** A timeframe's part a slice covers (both ends included). */
interface Slice {
  from: number;
  to: number;
}

/** LogsStore in SQLite (`<state>/db/workers-logs.sqlite`, LOGS_MIGRATIONS). */
export class SqliteLogsStore implements LogsStore {
  private readonly read = readStatements("events", { contains: (h, n) => `instr(${h}, ${n}) > 0` });
  private readonly q;

  constructor(
    private readonly db: Db,
    private readonly bounds: LogsReadBounds = LOGS_READ_BOUNDS,
  ) {
    this.q = {
      sliceEdge: db.prepare("SELECT ts FROM events WHERE account_id = ? AND ts >= ? AND ts <= ? ORDER BY ts DESC LIMIT 1 OFFSET ?"),
      settings: db.prepare("SELECT account_id, script, setting FROM settings"),
      setting: db.prepare("SELECT setting FROM settings WHERE account_id = ? AND script = ?"),
      upsertSetting: db.prepare(
        "INSERT INTO settings (account_id, script, setting) VALUES (?, ?, ?) ON CONFLICT (account_id, script) DO UPDATE SET setting = excluded.setting",
      ),
      deleteSetting: db.prepare("DELETE FROM settings WHERE account_id = ? AND script = ?"),
      insert: db.prepare(
        `INSERT INTO events (${INSERT_COLUMNS}) VALUES (${INSERT_COLUMNS.split(",")
          .map(() => "?")
          .join(", ")})`,
      ),
      addUsage: db.prepare(
        "INSERT INTO usage (account_id, row_count, byte_count) VALUES (?, ?, ?) ON CONFLICT (account_id) DO UPDATE SET row_count = row_count + excluded.row_count, byte_count = byte_count + excluded.byte_count",
      ),
      usage: db.prepare("SELECT row_count, byte_count FROM usage WHERE account_id = ?"),
      oldest: db.prepare("SELECT seq, bytes FROM events WHERE account_id = ? AND seq > ? ORDER BY seq LIMIT 1000"),
      evict: db.prepare("DELETE FROM events WHERE account_id = ? AND seq <= ?"),
      pruneBatch: db.prepare(`DELETE FROM events WHERE seq IN (SELECT seq FROM events WHERE ts < ? LIMIT ${PRUNE_BATCH})`),
      clearUsage: db.prepare("DELETE FROM usage"),
      recountUsage: db.prepare("INSERT INTO usage (account_id, row_count, byte_count) SELECT account_id, count(*), sum(bytes) FROM events GROUP BY account_id"),
    };
  }

  async settings(): Promise<{ accountId: string; script: string; setting: ObservabilitySetting }[]> {
    return (this.q.settings.all() as { account_id: string; script: string; setting: string }[]).map((r) => ({
      accountId: r.account_id,
      script: r.script,
      setting: JSON.parse(r.setting) as ObservabilitySetting,
    }));
  }

  async setting(accountId: string, script: string): Promise<ObservabilitySetting | undefined> {
    const row = this.q.setting.get(accountId, script) as { setting: string } | undefined;
    return row && (JSON.parse(row.setting) as ObservabilitySetting);
  }

  async setSetting(accountId: string, script: string, setting: ObservabilitySetting | undefined): Promise<void> {
    if (setting === undefined) this.q.deleteSetting.run(accountId, script);
    else this.q.upsertSetting.run(accountId, script, JSON.stringify(setting));
  }

  async append(events: readonly NewLogEvent[], cap: AccountCap): Promise<void> {
    this.db.transaction(() => {
      const added = new Map<string, { rows: number; bytes: number }>();
      for (const e of events) {
        const { values, bytes } = insertValues(e);
        this.q.insert.run(...values);
        const a = added.get(e.accountId) ?? { rows: 0, bytes: 0 };
        a.rows++;
        a.bytes += bytes;
        added.set(e.accountId, a);
      }
      for (const [accountId, a] of added) {
        this.q.addUsage.run(accountId, a.rows, a.bytes);
        this.evictOver(accountId, cap);
      }
    })();
  }

  /** Removes an account's oldest events until it is within its cap. */
  private evictOver(accountId: string, cap: AccountCap): void {
    const u = this.q.usage.get(accountId) as { row_count: number; byte_count: number };
    let rows = u.row_count;
    let bytes = u.byte_count;
    let cutoff = 0;
    while (rows > cap.rows || bytes > cap.bytes) {
      const batch = this.q.oldest.all(accountId, cutoff) as { seq: number; bytes: number }[];
      if (batch.length === 0) break;
      for (const r of batch) {
        if (rows <= cap.rows && bytes <= cap.bytes) break;
        rows--;
        bytes -= r.bytes;
        cutoff = r.seq;
      }
    }
    if (cutoff === 0) return;
    this.q.evict.run(accountId, cutoff);
    this.q.addUsage.run(accountId, rows - u.row_count, bytes - u.byte_count);
  }

  async prune(before: number): Promise<number> {
    let removed = 0;
    for (;;) {
      const n = this.q.pruneBatch.run(before).changes;
      removed += n;
      if (n < PRUNE_BATCH) break;
      await new Promise((resolve) => setImmediate(resolve));
    }
    if (removed > 0)
      this.db.transaction(() => {
        this.q.clearUsage.run();
        this.q.recountUsage.run();
      })();
    return removed;
  }

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
      const edge = this.q.sliceEdge.get(accountId, from, upper, take - 1) as { ts: number } | undefined;
      if (!edge) return yield { from, to: upper };
      yield { from: edge.ts, to: upper };
      examined += take;
      upper = edge.ts - 1;
    }
  }

  async events(accountId: string, q: EventQuery): Promise<{ events: LogEvent[]; count: number }> {
    const rows: EventRow[] = [];
    let n = 0;
    for await (const slice of this.slices(accountId, q.from, q.to)) {
      const part = { ...q, ...slice };
      if (rows.length < q.limit) {
        const page = this.read.events(accountId, { ...part, limit: q.limit - rows.length });
        rows.push(...(this.db.prepare(page.text).all(...page.params) as EventRow[]));
      }
      const count = this.read.count(accountId, part);
      n += (this.db.prepare(count.text).get(...count.params) as { n: number }).n;
    }
    return { events: rows.map(toEvent), count: n };
  }

  async invocations(accountId: string, q: EventQuery): Promise<LogEvent[]> {
    const ids: string[] = [];
    const seen = new Set<string>();
    for await (const slice of this.slices(accountId, q.from, q.to)) {
      const idsSql = this.read.invocationIds(accountId, { ...q, ...slice, limit: q.limit - ids.length });
      for (const r of this.db.prepare(idsSql.text).all(...idsSql.params) as { request_id: string }[]) {
        // An invocation whose events straddle two slices is named by both: once, at its newest.
        if (seen.has(r.request_id)) continue;
        seen.add(r.request_id);
        ids.push(r.request_id);
      }
      if (ids.length >= q.limit) break;
    }
    if (ids.length === 0) return [];
    const s = this.read.invocationEvents(accountId, ids);
    return (this.db.prepare(s.text).all(...s.params) as EventRow[]).map(toEvent);
  }

  async keys(accountId: string, q: KeysQuery): Promise<KeyInfo[]> {
    const newest: Record<string, number | null> = {};
    let columns: string[] = [];
    for await (const slice of this.slices(accountId, q.from, q.to)) {
      const keys = this.read.keys(accountId, { ...q, ...slice });
      columns = keys.columns;
      const row = this.db.prepare(keys.sql.text).get(...keys.sql.params) as Record<string, number | null>;
      for (const [k, v] of Object.entries(row)) if (v !== null && (newest[k] ?? null) === null) newest[k] = v;
    }
    return keysOf(columns, newest);
  }

  async values(accountId: string, q: ValuesQuery): Promise<(string | number)[]> {
    const values: (string | number)[] = [];
    const seen = new Set<string | number>();
    for await (const slice of this.slices(accountId, q.from, q.to)) {
      const s = this.read.values(accountId, { ...q, ...slice, limit: q.limit });
      for (const { v } of this.db.prepare(s.text).all(...s.params) as { v: string | number }[]) {
        if (seen.has(v) || values.length >= q.limit) continue;
        seen.add(v);
        values.push(v);
      }
      if (values.length >= q.limit) break;
    }
    return values;
  }

  async usage(accountId: string): Promise<{ rows: number; bytes: number }> {
    const u = this.q.usage.get(accountId) as { row_count: number; byte_count: number } | undefined;
    return { rows: u?.row_count ?? 0, bytes: u?.byte_count ?? 0 };
  }
}
