import type { RulesetView } from "./ruleset.js";
import type { StoredRuleset } from "./store.js";

/**
 * The statements both stores run (only the placeholders differ: `?` becomes `$n` on PostgreSQL, whose table is in
 * the area's schema), so the two backends cannot drift apart. The ruleset is stored as its JSON; its version also has
 * a column, for the compare-and-set of `put`.
 */
export const rulesSql = (table: string) => ({
  all: `SELECT zone_id, account_id, ruleset_json FROM ${table} ORDER BY zone_id`,
  zone: `SELECT zone_id, account_id, ruleset_json FROM ${table} WHERE zone_id = ?`,
  insert: `INSERT INTO ${table} (zone_id, account_id, version, ruleset_json) VALUES (?, ?, ?, ?) ON CONFLICT (zone_id) DO NOTHING`,
  update: `UPDATE ${table} SET account_id = ?, version = ?, ruleset_json = ? WHERE zone_id = ? AND version = ?`,
  delete: `DELETE FROM ${table} WHERE zone_id = ?`,
  deleteAt: `DELETE FROM ${table} WHERE zone_id = ? AND version = ?`,
});

export interface RulesetDbRow {
  zone_id: string;
  account_id: string;
  ruleset_json: string;
}

export const toStoredRuleset = (r: RulesetDbRow): StoredRuleset => ({
  zoneId: r.zone_id,
  accountId: r.account_id,
  ruleset: JSON.parse(r.ruleset_json) as RulesetView,
});

export const insertParams = (s: StoredRuleset) => [s.zoneId, s.accountId, Number(s.ruleset.version), JSON.stringify(s.ruleset)];
export const updateParams = (s: StoredRuleset, expectedVersion: string) => [
  s.accountId,
  Number(s.ruleset.version),
  JSON.stringify(s.ruleset),
  s.zoneId,
  Number(expectedVersion),
];
