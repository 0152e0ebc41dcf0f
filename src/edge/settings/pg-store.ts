import type { Bus } from "../../core/cluster/bus.js";
import type { Postgres } from "../../core/db/postgres.js";
import { putParams, settingsSql, toStoredSetting, type SettingDbRow } from "./sql.js";
import type { StoredSetting, ZoneSettingsStore } from "./store.js";

export const SETTINGS_AREA = "edge_settings";
/** The notice a change of one zone's settings sends: every node reads that zone's settings again. */
export const zoneSettingsChanged = (zoneId: string) => `zone:${zoneId}`;

/** `?` placeholders as PostgreSQL's `$1..$n`. */
const numbered = (sql: string) => {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
};
const SQL = Object.fromEntries(Object.entries(settingsSql(`${SETTINGS_AREA}.zone_settings`)).map(([k, v]) => [k, numbered(v)])) as ReturnType<
  typeof settingsSql
>;

/**
 * ZoneSettingsStore on PostgreSQL (schema `edge_settings`). A change announces `zone:<id>` inside its transaction,
 * so every node obeys the zone's new settings from its notice.
 */
export class PgZoneSettingsStore implements ZoneSettingsStore {
  constructor(
    private readonly pg: Postgres,
    private readonly bus: Bus,
  ) {}

  async all(): Promise<StoredSetting[]> {
    return (await this.pg.rows<SettingDbRow>(SQL.all)).map(toStoredSetting);
  }

  async zone(zoneId: string): Promise<StoredSetting[]> {
    return (await this.pg.rows<SettingDbRow>(SQL.zone, [zoneId])).map(toStoredSetting);
  }

  async put(settings: readonly StoredSetting[]): Promise<void> {
    if (settings.length === 0) return;
    await this.pg.withTransaction(async (tx) => {
      for (const s of settings) await tx.execute(SQL.put, putParams(s));
      for (const zoneId of new Set(settings.map((s) => s.zoneId))) await this.bus.publish(SETTINGS_AREA, zoneSettingsChanged(zoneId), tx);
    });
  }

  async deleteZone(zoneId: string): Promise<void> {
    await this.pg.withTransaction(async (tx) => {
      if ((await tx.execute(SQL.deleteZone, [zoneId])) > 0) await this.bus.publish(SETTINGS_AREA, zoneSettingsChanged(zoneId), tx);
    });
  }
}
