import type { Bus } from "../../core/cluster/bus.js";
import type { Postgres } from "../../core/db/postgres.js";
import { insertParams, rulesSql, toStoredRuleset, updateParams, type RulesetDbRow } from "./sql.js";
import type { CacheRulesStore, StoredRuleset } from "./store.js";

export const RULES_AREA = "edge_rules";
/** The notice a change of one zone's ruleset sends: every node reads that zone's ruleset again. */
export const zoneRulesChanged = (zoneId: string) => `zone:${zoneId}`;

/** `?` placeholders as PostgreSQL's `$1..$n`. */
const numbered = (sql: string) => {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
};
const SQL = Object.fromEntries(Object.entries(rulesSql(`${RULES_AREA}.cache_rulesets`)).map(([k, v]) => [k, numbered(v)])) as ReturnType<typeof rulesSql>;

/**
 * CacheRulesStore on PostgreSQL (schema `edge_rules`). A change announces `zone:<id>` inside its transaction, so
 * every node applies the zone's new rules from its notice.
 */
export class PgCacheRulesStore implements CacheRulesStore {
  constructor(
    private readonly pg: Postgres,
    private readonly bus: Bus,
  ) {}

  async all(): Promise<StoredRuleset[]> {
    return (await this.pg.rows<RulesetDbRow>(SQL.all)).map(toStoredRuleset);
  }

  async zone(zoneId: string): Promise<StoredRuleset | undefined> {
    const row = await this.pg.row<RulesetDbRow>(SQL.zone, [zoneId]);
    return row && toStoredRuleset(row);
  }

  async put(row: StoredRuleset, expectedVersion: string | undefined): Promise<boolean> {
    return this.pg.withTransaction(async (tx) => {
      const done =
        expectedVersion === undefined ? await tx.execute(SQL.insert, insertParams(row)) : await tx.execute(SQL.update, updateParams(row, expectedVersion));
      if (done !== 1) return false;
      await this.bus.publish(RULES_AREA, zoneRulesChanged(row.zoneId), tx);
      return true;
    });
  }

  async delete(zoneId: string, expectedVersion?: string): Promise<boolean> {
    return this.pg.withTransaction(async (tx) => {
      const done = expectedVersion === undefined ? await tx.execute(SQL.delete, [zoneId]) : await tx.execute(SQL.deleteAt, [zoneId, Number(expectedVersion)]);
      if (done === 0) return false;
      await this.bus.publish(RULES_AREA, zoneRulesChanged(zoneId), tx);
      return true;
    });
  }
}
