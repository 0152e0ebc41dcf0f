import type { AreaCopier } from "../../core/state-copy/area.js";
import { LOGS_PG_MIGRATIONS } from "./pg-migrations.js";
import { LOGS_AREA } from "./pg-store.js";
import { LOGS_MIGRATIONS } from "./sqlite-migrations.js";

/**
 * Workers Logs for `edgecli state copy`: each Worker's `observability` setting. The kept events are not carried: they
 * are history that the retention removes anyway (as the analytics rollups), not state.
 */
export const workersLogsCopier: AreaCopier = {
  name: "workers logs settings",
  sqlite: { database: "workers-logs", migrations: LOGS_MIGRATIONS },
  postgres: { schema: LOGS_AREA, migrations: LOGS_PG_MIGRATIONS },
  tables: [{ table: "settings", columns: ["account_id", "script", "setting"], key: ["account_id", "script"] }],
};
