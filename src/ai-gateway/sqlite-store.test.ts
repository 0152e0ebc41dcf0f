import { sqliteStoreFactory } from "../core/testing/contract.js";
import { AI_GATEWAY_MIGRATIONS } from "./sqlite-migrations.js";
import { sqliteStores } from "./sqlite-store.js";
import { describeAiGatewayStores } from "./store.contract.js";

describeAiGatewayStores(
  "SQLite",
  sqliteStoreFactory(AI_GATEWAY_MIGRATIONS, (db) => sqliteStores(db)),
);
