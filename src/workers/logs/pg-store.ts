import type { Postgres } from "../../core/db/postgres.js";
import type { Sql } from "./query.js";
import { INSERT_COLUMNS, insertValues } from "./rows.js";
import type { ObservabilitySetting } from "./settings.js";
import { LOGS_READ_BOUNDS, SlicedReads, type LogsReadBounds } from "./sliced-reads.js";
import { readStatements } from "./statements.js";
import type { AccountCap, LogsStore, NewLogEvent } from "./store.js";

/** The PostgreSQL schema of Workers Logs. */
export const LOGS_AREA = "workers_logs";

/** `?` placeholders numbered as PostgreSQL wants them (the statements hold no `?` but placeholders). */
const numbered = (s: Sql): [string, unknown[]] => {
  let i = 0;
  return [s.text.replace(/\?/g, () => `$${++i}`), s.params];
};

/** LogsStore on PostgreSQL (schema `workers_logs`, LOGS_PG_MIGRATIONS), shared by every node. */
export class PgLogsStore extends SlicedReads implements LogsStore {
  constructor(
    private readonly pg: Postgres,
    bounds: LogsReadBounds = LOGS_READ_BOUNDS,
  ) {
    super(
      readStatements("workers_logs.events", { contains: (h, n) => `strpos(${h}, ${n}) > 0` }),
      { all: <T extends object>(s: Sql) => pg.rows<T>(...numbered(s)), get: <T extends object>(s: Sql) => pg.row<T>(...numbered(s)) },
      bounds,
    );
  }

  async settings(): Promise<{ accountId: string; script: string; setting: ObservabilitySetting }[]> {
    const rows = await this.pg.rows<{ account_id: string; script: string; setting: string }>("SELECT account_id, script, setting FROM workers_logs.settings");
    return rows.map((r) => ({ accountId: r.account_id, script: r.script, setting: JSON.parse(r.setting) as ObservabilitySetting }));
  }

  async setting(accountId: string, script: string): Promise<ObservabilitySetting | undefined> {
    const row = await this.pg.row<{ setting: string }>("SELECT setting FROM workers_logs.settings WHERE account_id = $1 AND script = $2", [accountId, script]);
    return row && (JSON.parse(row.setting) as ObservabilitySetting);
  }

  async setSetting(accountId: string, script: string, setting: ObservabilitySetting | undefined): Promise<void> {
    if (setting === undefined) await this.pg.execute("DELETE FROM workers_logs.settings WHERE account_id = $1 AND script = $2", [accountId, script]);
    else
      await this.pg.execute(
        "INSERT INTO workers_logs.settings (account_id, script, setting) VALUES ($1, $2, $3) ON CONFLICT (account_id, script) DO UPDATE SET setting = excluded.setting",
        [accountId, script, JSON.stringify(setting)],
      );
  }

  async append(events: readonly NewLogEvent[], cap: AccountCap): Promise<void> {
    if (events.length === 0) return;
    await this.pg.withTransaction(async (tx) => {
      const added = new Map<string, { rows: number; bytes: number }>();
      const params: unknown[] = [];
      const tuples: string[] = [];
      for (const e of events) {
        const { values, bytes } = insertValues(e);
        tuples.push(`(${values.map((_, i) => `$${params.length + i + 1}`).join(", ")})`);
        params.push(...values);
        const a = added.get(e.accountId) ?? { rows: 0, bytes: 0 };
        a.rows++;
        a.bytes += bytes;
        added.set(e.accountId, a);
      }
      await tx.execute(`INSERT INTO workers_logs.events (${INSERT_COLUMNS}) VALUES ${tuples.join(", ")}`, params);
      for (const [accountId, a] of added) {
        const u = await tx.row<{ row_count: string; byte_count: string }>(
          `INSERT INTO workers_logs.usage (account_id, row_count, byte_count) VALUES ($1, $2, $3)
           ON CONFLICT (account_id) DO UPDATE SET row_count = workers_logs.usage.row_count + excluded.row_count, byte_count = workers_logs.usage.byte_count + excluded.byte_count
           RETURNING row_count, byte_count`,
          [accountId, a.rows, a.bytes],
        );
        let rows = Number(u!.row_count);
        let bytes = Number(u!.byte_count);
        let cutoff = 0;
        while (rows > cap.rows || bytes > cap.bytes) {
          const batch = await tx.rows<{ seq: string; bytes: number }>(
            "SELECT seq, bytes FROM workers_logs.events WHERE account_id = $1 AND seq > $2 ORDER BY seq LIMIT 1000",
            [accountId, cutoff],
          );
          if (batch.length === 0) break;
          for (const r of batch) {
            if (rows <= cap.rows && bytes <= cap.bytes) break;
            rows--;
            bytes -= r.bytes;
            cutoff = Number(r.seq);
          }
        }
        if (cutoff === 0) continue;
        await tx.execute("DELETE FROM workers_logs.events WHERE account_id = $1 AND seq <= $2", [accountId, cutoff]);
        await tx.execute("UPDATE workers_logs.usage SET row_count = $2, byte_count = $3 WHERE account_id = $1", [accountId, rows, bytes]);
      }
    });
  }

  async prune(before: number): Promise<number> {
    return this.pg.withTransaction(async (tx) => {
      const removed = await tx.execute("DELETE FROM workers_logs.events WHERE ts < $1", [before]);
      if (removed > 0) {
        await tx.execute("DELETE FROM workers_logs.usage");
        await tx.execute(
          "INSERT INTO workers_logs.usage (account_id, row_count, byte_count) SELECT account_id, count(*), sum(bytes) FROM workers_logs.events GROUP BY account_id",
        );
      }
      return removed;
    });
  }

  async usage(accountId: string): Promise<{ rows: number; bytes: number }> {
    const u = await this.pg.row<{ row_count: string; byte_count: string }>("SELECT row_count, byte_count FROM workers_logs.usage WHERE account_id = $1", [
      accountId,
    ]);
    return { rows: Number(u?.row_count ?? 0), bytes: Number(u?.byte_count ?? 0) };
  }
}
