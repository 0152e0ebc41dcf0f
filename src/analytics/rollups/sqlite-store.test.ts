import { sqliteStoreFactory } from "../../core/testing/contract.js";
import { ROLLUP_MIGRATIONS } from "./sqlite-migrations.js";
import { SqliteRollupStore } from "./sqlite-store.js";
import { describeRollupStore } from "./store.contract.js";

describeRollupStore(
  "SQLite",
  sqliteStoreFactory(ROLLUP_MIGRATIONS, (db) => new SqliteRollupStore(db)),
);
