import { FileContentStore } from "../../core/content/file-store.js";
import { sqliteStoreFactory } from "../../core/testing/contract.js";
import { ASSETS_MIGRATIONS } from "./sqlite-migrations.js";
import { SqliteAssetsStore } from "./sqlite-store.js";
import { describeAssetsStore } from "./store.contract.js";

describeAssetsStore(
  "SQLite",
  sqliteStoreFactory(ASSETS_MIGRATIONS, (db, dir) => new SqliteAssetsStore(db, new FileContentStore(dir))),
);
