import type { Db } from "../../core/db/sqlite.js";
import { SqliteRollupReader } from "./sqlite-reader.js";
import { addHourParams, addParams, querySql, rollupSql, toGroupRow, type GroupDbRow } from "./sql.js";
import type { RollupGroupRow, RollupQuery, RollupRow, RollupStore } from "./store.js";

/**
 * RollupStore on SQLite (`<state>/db/analytics.sqlite`). Queries run on a thread of their own (sqlite-reader.ts)
 * when the database is a file; writes stay on `db`.
 */
export class SqliteRollupStore implements RollupStore {
  private readonly sql = rollupSql("minute_rollups");
  private readonly addAll: (nodeId: string, rows: readonly RollupRow[]) => void;
  private readonly reader?: SqliteRollupReader;

  constructor(private readonly db: Db) {
    if (!db.memory) this.reader = new SqliteRollupReader(db.name);
    const add = db.prepare(this.sql.add);
    const addHour = db.prepare(this.sql.addHour);
    this.addAll = db.transaction((nodeId: string, rows: readonly RollupRow[]) => {
      for (const r of rows) {
        add.run(...addParams(nodeId, r));
        addHour.run(...addHourParams(nodeId, r));
      }
    });
  }

  async add(nodeId: string, rows: readonly RollupRow[]): Promise<void> {
    if (rows.length > 0) this.addAll(nodeId, rows);
  }

  async query(q: RollupQuery): Promise<RollupGroupRow[]> {
    const { sql, params } = querySql("minute_rollups", q);
    const rows: GroupDbRow[] = this.reader ? await this.reader.all(sql, params) : this.db.prepare<unknown[], GroupDbRow>(sql).all(...params);
    return rows.map((r) => toGroupRow(q, r));
  }

  /** Ends the read thread (the database is the caller's to close). */
  close(): Promise<void> {
    return this.reader?.close() ?? Promise.resolve();
  }

  async prune(before: number): Promise<number> {
    this.db.prepare(this.sql.pruneHours).run(before);
    return this.db.prepare(this.sql.prune).run(before).changes;
  }

  async deleteScope(scope: string): Promise<void> {
    this.db.prepare(this.sql.deleteScope).run(scope);
    this.db.prepare(this.sql.deleteScopeHours).run(scope);
  }
}
