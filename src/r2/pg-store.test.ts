import { testContentStore, testPostgres } from "../core/testing/backends.js";
import { R2_PG_MIGRATIONS } from "./pg-migrations.js";
import { PgR2Store } from "./pg-store.js";
import { describeR2Store } from "./store.contract.js";

describeR2Store("PostgreSQL + S3", async (t) => {
  const pg = await testPostgres(t, "r2", R2_PG_MIGRATIONS);
  const content = pg && (await testContentStore(t, "r2"));
  return content && { store: { store: new PgR2Store(pg, content), content }, close() {} };
});
