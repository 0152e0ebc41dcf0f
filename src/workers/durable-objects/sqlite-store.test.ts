import { sqliteStoreFactory } from "../../core/testing/contract.js";
import { DURABLE_OBJECTS_MIGRATIONS } from "./sqlite-migrations.js";
import { SqliteDurableObjectsStore } from "./sqlite-store.js";
import { describeDurableObjectsStore } from "./store.contract.js";

describeDurableObjectsStore(
  "SQLite",
  sqliteStoreFactory(DURABLE_OBJECTS_MIGRATIONS, (db) => new SqliteDurableObjectsStore(db)),
);
