import { sqliteStoreFactory } from "../../core/testing/contract.js";
import { ROUTES_MIGRATIONS } from "./sqlite-migrations.js";
import { SqliteRoutesStore } from "./sqlite-store.js";
import { describeRoutesStore } from "./store.contract.js";

describeRoutesStore(
  "SQLite",
  sqliteStoreFactory(ROUTES_MIGRATIONS, (db) => new SqliteRoutesStore(db)),
);
