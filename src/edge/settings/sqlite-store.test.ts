import { sqliteStoreFactory } from "../../core/testing/contract.js";
import { SETTINGS_MIGRATIONS } from "./sqlite-migrations.js";
import { SqliteZoneSettingsStore } from "./sqlite-store.js";
import { describeZoneSettingsStore } from "./store.contract.js";

describeZoneSettingsStore(
  "SQLite",
  sqliteStoreFactory(SETTINGS_MIGRATIONS, (db) => new SqliteZoneSettingsStore(db)),
);
