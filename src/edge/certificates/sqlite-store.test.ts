import { sqliteStoreFactory } from "../../core/testing/contract.js";
import { CERTIFICATES_MIGRATIONS } from "./sqlite-migrations.js";
import { SqliteCertificateStore } from "./sqlite-store.js";
import { describeCertificateStore } from "./store.contract.js";

describeCertificateStore(
  "SQLite",
  sqliteStoreFactory(CERTIFICATES_MIGRATIONS, (db) => new SqliteCertificateStore(db)),
);
