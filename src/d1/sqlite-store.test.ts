import { sqliteStoreFactory } from "../core/testing/contract.js";
import { D1_MIGRATIONS } from "./sqlite-migrations.js";
import { SqliteD1Store } from "./sqlite-store.js";
import { describeD1Store } from "./store.contract.js";

describeD1Store(
  "SQLite",
  sqliteStoreFactory(D1_MIGRATIONS, (db) => new SqliteD1Store(db)),
);
