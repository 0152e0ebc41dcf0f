import { testPostgres } from "../../core/testing/backends.js";
import { LOGS_PG_MIGRATIONS } from "./pg-migrations.js";
import { LOGS_AREA, PgLogsStore } from "./pg-store.js";
import { describeLogsStore } from "./store.contract.js";

describeLogsStore("PostgreSQL", async (t) => {
  const pg = await testPostgres(t, LOGS_AREA, LOGS_PG_MIGRATIONS);
  return pg && { store: new PgLogsStore(pg), close() {} };
});
