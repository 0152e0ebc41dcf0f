import type { SettingValue } from "./definitions.js";

/** One setting a zone changed from its default. */
export interface StoredSetting {
  zoneId: string;
  accountId: string;
  id: string;
  value: SettingValue;
  /** When it was last changed, ms since the epoch. */
  modifiedOn: number;
}

/**
 * Zone settings changed from their defaults (a zone that never changed one has no row). Every backend keeps these
 * promises (store.contract.ts):
 * - `put` writes all its settings or none (one transaction), each replacing the zone's row of that id.
 * - `zone` reads one zone's rows, `all` every zone's, ordered by zone then setting id.
 * - `deleteZone` removes a zone's rows (the zone was deleted); other zones keep theirs.
 */
export interface ZoneSettingsStore {
  all(): Promise<StoredSetting[]>;
  zone(zoneId: string): Promise<StoredSetting[]>;
  put(settings: readonly StoredSetting[]): Promise<void>;
  deleteZone(zoneId: string): Promise<void>;
}
