import type { Bus } from "../../core/cluster/bus.js";
import type { Db } from "../../core/db/sqlite.js";
import { SETTINGS_AREA, zoneSettingsChanged } from "./pg-store.js";
import { putParams, settingsSql, toStoredSetting, type SettingDbRow } from "./sql.js";
import type { StoredSetting, ZoneSettingsStore } from "./store.js";

/**
 * ZoneSettingsStore on SQLite (`<state>/db/edge-settings.sqlite`). Given the bus, each change is announced after it
 * committed, as the PostgreSQL store does: the edge threads (edge/threads/) read the zone again.
 */
export class SqliteZoneSettingsStore implements ZoneSettingsStore {
  private readonly q;
  private readonly putAll: (settings: readonly StoredSetting[]) => void;

  constructor(
    db: Db,
    private readonly bus?: Pick<Bus, "publish">,
  ) {
    const sql = settingsSql("zone_settings");
    this.q = {
      all: db.prepare<[], SettingDbRow>(sql.all),
      zone: db.prepare<[string], SettingDbRow>(sql.zone),
      put: db.prepare(sql.put),
      deleteZone: db.prepare<[string]>(sql.deleteZone),
    };
    this.putAll = db.transaction((settings: readonly StoredSetting[]) => {
      for (const s of settings) this.q.put.run(...putParams(s));
    });
  }

  async all(): Promise<StoredSetting[]> {
    return this.q.all.all().map(toStoredSetting);
  }

  async zone(zoneId: string): Promise<StoredSetting[]> {
    return this.q.zone.all(zoneId).map(toStoredSetting);
  }

  async put(settings: readonly StoredSetting[]): Promise<void> {
    this.putAll(settings);
    for (const zoneId of new Set(settings.map((s) => s.zoneId))) await this.bus?.publish(SETTINGS_AREA, zoneSettingsChanged(zoneId));
  }

  async deleteZone(zoneId: string): Promise<void> {
    if (this.q.deleteZone.run(zoneId).changes > 0) await this.bus?.publish(SETTINGS_AREA, zoneSettingsChanged(zoneId));
  }
}
