import { sqliteStoreFactory } from "../../core/testing/contract.js";
import { SqlitePurgeLimitStore } from "./purge-limits-sqlite.js";
import { describePurgeLimitStore } from "./purge-limits-store.contract.js";
import { PURGE_LIMITS_MIGRATIONS } from "./purge-limits-store.js";

describePurgeLimitStore(
  "SQLite",
  sqliteStoreFactory(PURGE_LIMITS_MIGRATIONS, (db) => new SqlitePurgeLimitStore(db)),
);
