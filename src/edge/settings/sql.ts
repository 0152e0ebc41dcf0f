import type { SettingValue } from "./definitions.js";
import type { StoredSetting } from "./store.js";

/**
 * The statements both stores run (only the placeholders differ: `?` becomes `$n` on PostgreSQL, whose table is in
 * the area's schema), so the two backends cannot drift apart. A value is stored as JSON (a string or a number).
 */
export const settingsSql = (table: string) => ({
  all: `SELECT zone_id, account_id, setting, value_json, modified_on FROM ${table} ORDER BY zone_id, setting`,
  zone: `SELECT zone_id, account_id, setting, value_json, modified_on FROM ${table} WHERE zone_id = ? ORDER BY setting`,
  put: `INSERT INTO ${table} (zone_id, account_id, setting, value_json, modified_on) VALUES (?, ?, ?, ?, ?)
        ON CONFLICT (zone_id, setting) DO UPDATE SET account_id = excluded.account_id, value_json = excluded.value_json,
          modified_on = excluded.modified_on`,
  deleteZone: `DELETE FROM ${table} WHERE zone_id = ?`,
});

export interface SettingDbRow {
  zone_id: string;
  account_id: string;
  setting: string;
  value_json: string;
  /** BIGINT columns come from PostgreSQL as strings. */
  modified_on: number | string;
}

export const toStoredSetting = (r: SettingDbRow): StoredSetting => ({
  zoneId: r.zone_id,
  accountId: r.account_id,
  id: r.setting,
  value: JSON.parse(r.value_json) as SettingValue,
  modifiedOn: Number(r.modified_on),
});

export const putParams = (s: StoredSetting) => [s.zoneId, s.accountId, s.id, JSON.stringify(s.value), s.modifiedOn];
