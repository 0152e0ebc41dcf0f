import { testPostgres } from "../../core/testing/backends.js";
import { PgPurgeLimitStore } from "./purge-limits-pg.js";
import { describePurgeLimitStore } from "./purge-limits-store.contract.js";
import { PURGE_LIMITS_AREA, PURGE_LIMITS_PG_MIGRATIONS } from "./purge-limits-store.js";

// A pool of 8: the concurrent takes run on several connections at once, as on several nodes.
describePurgeLimitStore("PostgreSQL", async (t) => {
  const pg = await testPostgres(t, PURGE_LIMITS_AREA, PURGE_LIMITS_PG_MIGRATIONS, 8);
  return pg && { store: new PgPurgeLimitStore(pg), close() {} };
});
