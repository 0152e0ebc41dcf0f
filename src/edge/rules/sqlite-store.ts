import type { Bus } from "../../core/cluster/bus.js";
import type { Db } from "../../core/db/sqlite.js";
import { RULES_AREA, zoneRulesChanged } from "./pg-store.js";
import { insertParams, rulesSql, toStoredRuleset, updateParams, type RulesetDbRow } from "./sql.js";
import type { CacheRulesStore, StoredRuleset } from "./store.js";

/**
 * CacheRulesStore on SQLite (`<state>/db/edge-rules.sqlite`). Given the bus, each change is announced after it
 * committed, as the PostgreSQL store does: the edge threads (edge/threads/) read the zone again.
 */
export class SqliteCacheRulesStore implements CacheRulesStore {
  private readonly q;

  constructor(
    db: Db,
    private readonly bus?: Pick<Bus, "publish">,
  ) {
    const sql = rulesSql("cache_rulesets");
    this.q = {
      all: db.prepare<[], RulesetDbRow>(sql.all),
      zone: db.prepare<[string], RulesetDbRow>(sql.zone),
      insert: db.prepare(sql.insert),
      update: db.prepare(sql.update),
      delete: db.prepare<[string]>(sql.delete),
      deleteAt: db.prepare<[string, number]>(sql.deleteAt),
    };
  }

  async all(): Promise<StoredRuleset[]> {
    return this.q.all.all().map(toStoredRuleset);
  }

  async zone(zoneId: string): Promise<StoredRuleset | undefined> {
    const row = this.q.zone.get(zoneId);
    return row && toStoredRuleset(row);
  }

  async put(row: StoredRuleset, expectedVersion: string | undefined): Promise<boolean> {
    const done = expectedVersion === undefined ? this.q.insert.run(...insertParams(row)) : this.q.update.run(...updateParams(row, expectedVersion));
    if (done.changes !== 1) return false;
    await this.bus?.publish(RULES_AREA, zoneRulesChanged(row.zoneId));
    return true;
  }

  async delete(zoneId: string, expectedVersion?: string): Promise<boolean> {
    const done = expectedVersion === undefined ? this.q.delete.run(zoneId) : this.q.deleteAt.run(zoneId, Number(expectedVersion));
    if (done.changes === 0) return false;
    await this.bus?.publish(RULES_AREA, zoneRulesChanged(zoneId));
    return true;
  }
}
