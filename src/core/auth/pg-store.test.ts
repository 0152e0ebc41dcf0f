import { testPostgres } from "../testing/backends.js";
import { IDENTITY_PG_MIGRATIONS } from "./pg-migrations.js";
import { PgIdentityStore } from "./pg-store.js";
import { describeIdentityStore } from "./store.contract.js";

describeIdentityStore("PostgreSQL", async (t) => {
  const pg = await testPostgres(t, "core", IDENTITY_PG_MIGRATIONS);
  return pg && { store: new PgIdentityStore(pg), close() {} };
});
