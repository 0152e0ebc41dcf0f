import type { AreaCopier } from "../../core/state-copy/area.js";
import { ASSETS_PG_MIGRATIONS } from "./pg-migrations.js";
import { ASSETS_AREA } from "./pg-store.js";
import { ASSETS_MIGRATIONS } from "./sqlite-migrations.js";

/**
 * Workers' static assets for `edgecli state copy`: the stored files of each account (bodies streamed into the target's
 * content store) and each Worker's list of files with its options. Upload sessions are not carried: they last an hour,
 * and a deploy interrupted by the move starts a new one.
 */
export const workerAssetsCopier: AreaCopier = {
  name: "worker assets",
  sqlite: { database: "worker-assets", migrations: ASSETS_MIGRATIONS },
  postgres: { schema: ASSETS_AREA, migrations: ASSETS_PG_MIGRATIONS },
  content: "worker-assets",
  tables: [
    {
      table: "bodies",
      columns: ["account_id", "hash", "content_id", "content_type", "size", "orphaned_at"],
      key: ["account_id", "hash"],
      copyContent: async (row, content) => ({ ...row, content_id: await content.copy(row.content_id as string) }),
    },
    { table: "script_assets", columns: ["account_id", "script", "manifest", "config"], key: ["account_id", "script"] },
  ],
};
