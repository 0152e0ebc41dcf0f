import { sqliteStoreFactory } from "../../core/testing/contract.js";
import { RULES_MIGRATIONS } from "./sqlite-migrations.js";
import { SqliteCacheRulesStore } from "./sqlite-store.js";
import { describeCacheRulesStore } from "./store.contract.js";

describeCacheRulesStore(
  "SQLite",
  sqliteStoreFactory(RULES_MIGRATIONS, (db) => new SqliteCacheRulesStore(db)),
);
