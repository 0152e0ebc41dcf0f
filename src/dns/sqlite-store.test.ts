import { sqliteStoreFactory } from "../core/testing/contract.js";
import { DNS_MIGRATIONS } from "./sqlite-migrations.js";
import { SqliteDnsStore } from "./sqlite-store.js";
import { describeDnsStore } from "./store.contract.js";

describeDnsStore(
  "SQLite",
  sqliteStoreFactory(DNS_MIGRATIONS, (db) => new SqliteDnsStore(db)),
);
