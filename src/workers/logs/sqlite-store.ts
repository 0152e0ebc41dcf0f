import type { Db } from "../../core/db/sqlite.js";
import type { Sql } from "./query.js";
import { INSERT_COLUMNS, insertValues } from "./rows.js";
import type { ObservabilitySetting } from "./settings.js";
import { LOGS_READ_BOUNDS, SlicedReads, type LogsReadBounds } from "./sliced-reads.js";
import { readStatements } from "./statements.js";
import type { AccountCap, LogsStore, NewLogEvent } from "./store.js";

/** Rows inserted by one statement: one statement of many rows costs much less per row than as many of one. */
const INSERT_ROWS = 32;
const insertSql = (rows: number) =>
  `INSERT INTO events (${INSERT_COLUMNS}) VALUES ${Array.from(
    { length: rows },
    () =>
      `(${INSERT_COLUMNS.split(",")
        .map(() => "?")
        .join(", ")})`,
  ).join(", ")}`;

/** Rows removed by one statement of a prune, so that a large one does not hold the event loop. */
const PRUNE_BATCH = 5_000;

/** LogsStore in SQLite (`<state>/db/workers-logs.sqlite`, LOGS_MIGRATIONS). */
export class SqliteLogsStore extends SlicedReads implements LogsStore {
  private readonly q;

  constructor(
    private readonly db: Db,
    bounds: LogsReadBounds = LOGS_READ_BOUNDS,
  ) {
    super(
      readStatements("events", { contains: (h, n) => `instr(${h}, ${n}) > 0` }),
      {
        all: async <T extends object>(s: Sql) => db.prepare(s.text).all(...s.params) as T[],
        get: async <T extends object>(s: Sql) => db.prepare(s.text).get(...s.params) as T | undefined,
      },
      bounds,
    );
    this.q = {
      settings: db.prepare("SELECT account_id, script, setting FROM settings"),
      setting: db.prepare("SELECT setting FROM settings WHERE account_id = ? AND script = ?"),
      upsertSetting: db.prepare(
        "INSERT INTO settings (account_id, script, setting) VALUES (?, ?, ?) ON CONFLICT (account_id, script) DO UPDATE SET setting = excluded.setting",
      ),
      deleteSetting: db.prepare("DELETE FROM settings WHERE account_id = ? AND script = ?"),
      insert: db.prepare(insertSql(1)),
      insertMany: db.prepare(insertSql(INSERT_ROWS)),
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
      // Whole statements of INSERT_ROWS rows, then one statement a row for the rest (rows keep their order: seq).
      const whole = events.length - (events.length % INSERT_ROWS);
      for (let i = 0; i < events.length;) {
        const n = i < whole ? INSERT_ROWS : 1;
        const values: unknown[] = [];
        for (const e of events.slice(i, i + n)) {
          const row = insertValues(e);
          values.push(...row.values);
          const a = added.get(e.accountId) ?? { rows: 0, bytes: 0 };
          a.rows++;
          a.bytes += row.bytes;
          added.set(e.accountId, a);
        }
        (n === INSERT_ROWS ? this.q.insertMany : this.q.insert).run(...values);
        i += n;
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

  async usage(accountId: string): Promise<{ rows: number; bytes: number }> {
    const u = this.q.usage.get(accountId) as { row_count: number; byte_count: number } | undefined;
    return { rows: u?.row_count ?? 0, bytes: u?.byte_count ?? 0 };
  }
}
