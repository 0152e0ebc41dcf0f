import type { Db } from "../../core/db/sqlite.js";
import { putParams, settingsSql, toStoredSetting, type SettingDbRow } from "./sql.js";
import type { StoredSetting, ZoneSettingsStore } from "./store.js";

/** ZoneSettingsStore on SQLite (`<state>/db/edge-settings.sqlite`). */
export class SqliteZoneSettingsStore implements ZoneSettingsStore {
  private readonly q;
  private readonly putAll: (settings: readonly StoredSetting[]) => void;

  constructor(db: Db) {
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
  }

  async deleteZone(zoneId: string): Promise<void> {
    this.q.deleteZone.run(zoneId);
  }
}
