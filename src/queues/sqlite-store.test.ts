import { sqliteStoreFactory } from "../core/testing/contract.js";
import { QUEUES_MIGRATIONS } from "./sqlite-migrations.js";
import { SqliteQueuesStore } from "./sqlite-store.js";
import { describeQueuesStore } from "./store.contract.js";

describeQueuesStore(
  "SQLite",
  sqliteStoreFactory(QUEUES_MIGRATIONS, (db) => new SqliteQueuesStore(db)),
);
