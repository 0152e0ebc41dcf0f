import { testContentStore, testPostgres } from "../../core/testing/backends.js";
import { ASSETS_PG_MIGRATIONS } from "./pg-migrations.js";
import { ASSETS_AREA, PgAssetsStore } from "./pg-store.js";
import { describeAssetsStore } from "./store.contract.js";

describeAssetsStore("PostgreSQL", async (t) => {
  const pg = await testPostgres(t, ASSETS_AREA, ASSETS_PG_MIGRATIONS);
  const content = await testContentStore(t, ASSETS_AREA);
  return pg && content && { store: new PgAssetsStore(pg, content), close() {} };
});
