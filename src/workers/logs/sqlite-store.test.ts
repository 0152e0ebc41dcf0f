import { sqliteStoreFactory } from "../../core/testing/contract.js";
import { LOGS_MIGRATIONS } from "./sqlite-migrations.js";
import { SqliteLogsStore } from "./sqlite-store.js";
import { describeLogsStore } from "./store.contract.js";

describeLogsStore(
  "SQLite",
  sqliteStoreFactory(LOGS_MIGRATIONS, (db) => new SqliteLogsStore(db)),
);
