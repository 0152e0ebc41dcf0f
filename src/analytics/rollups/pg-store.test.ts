import { testPostgres } from "../../core/testing/backends.js";
import { ROLLUP_PG_MIGRATIONS } from "./pg-migrations.js";
import { ANALYTICS_AREA, PgRollupStore } from "./pg-store.js";
import { describeRollupStore } from "./store.contract.js";

describeRollupStore("PostgreSQL", async (t) => {
  const pg = await testPostgres(t, ANALYTICS_AREA, ROLLUP_PG_MIGRATIONS);
  return pg && { store: new PgRollupStore(pg), close() {} };
});
