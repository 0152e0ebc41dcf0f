import { testPostgres } from "../core/testing/backends.js";
import { QUEUES_PG_MIGRATIONS } from "./pg-migrations.js";
import { PgQueuesStore, QUEUES_AREA } from "./pg-store.js";
import { describeQueuesStore } from "./store.contract.js";

describeQueuesStore("PostgreSQL", async (t) => {
  const pg = await testPostgres(t, QUEUES_AREA, QUEUES_PG_MIGRATIONS);
  return pg && { store: new PgQueuesStore(pg), close() {} };
});
