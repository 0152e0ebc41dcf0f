import type { Postgres } from "../../core/db/postgres.js";
import { addHourParams, addParams, querySql, rollupSql, toGroupRow, type GroupDbRow } from "./sql.js";
import type { RollupGroupRow, RollupQuery, RollupRow, RollupStore } from "./store.js";

export const ANALYTICS_AREA = "analytics";
const TABLE = `${ANALYTICS_AREA}.minute_rollups`;

/** `?` placeholders as PostgreSQL's `$1..$n`. */
const numbered = (sql: string) => {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
};
const SQL = Object.fromEntries(Object.entries(rollupSql(TABLE)).map(([k, v]) => [k, numbered(v)])) as ReturnType<typeof rollupSql>;

/** RollupStore on PostgreSQL (schema `analytics`): every node's rows in one table, each under its node id. */
export class PgRollupStore implements RollupStore {
  constructor(private readonly pg: Postgres) {}

  async add(nodeId: string, rows: readonly RollupRow[]): Promise<void> {
    if (rows.length === 0) return;
    await this.pg.withTransaction(async (tx) => {
      for (const r of rows) {
        await tx.execute(SQL.add, addParams(nodeId, r));
        await tx.execute(SQL.addHour, addHourParams(nodeId, r));
      }
    });
  }

  async query(q: RollupQuery): Promise<RollupGroupRow[]> {
    const { sql, params } = querySql(TABLE, q);
    return (await this.pg.rows<GroupDbRow>(numbered(sql), params)).map((r) => toGroupRow(q, r));
  }

  async prune(before: number): Promise<number> {
    await this.pg.execute(SQL.pruneHours, [before]);
    return this.pg.execute(SQL.prune, [before]);
  }

  async deleteScope(scope: string): Promise<void> {
    await this.pg.execute(SQL.deleteScope, [scope]);
    await this.pg.execute(SQL.deleteScopeHours, [scope]);
  }
}
