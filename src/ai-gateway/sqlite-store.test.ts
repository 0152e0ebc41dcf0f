import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "../core/db/sqlite.js";
import { sqliteStoreFactory } from "../core/testing/contract.js";
import { AI_GATEWAY_MIGRATIONS } from "./sqlite-migrations.js";
import { sqliteStores } from "./sqlite-store.js";
import { describeAiGatewayStores } from "./store.contract.js";

describeAiGatewayStores(
  "SQLite",
  sqliteStoreFactory(AI_GATEWAY_MIGRATIONS, (db) => sqliteStores(db)),
);

// As the platform runs it: batches written by the log writer thread on its own connection, everything else here.
describeAiGatewayStores("SQLite, logs written by a thread", async () => {
  const dir = mkdtempSync(join(tmpdir(), "edge-store-contract-"));
  const db = openDatabase(join(dir, "store.sqlite"), AI_GATEWAY_MIGRATIONS);
  const store = sqliteStores(db, { writerThread: true });
  return {
    store,
    close: async () => {
      await store.close();
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
