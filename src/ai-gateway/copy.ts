import type { AreaCopier } from "../core/state-copy/area.js";
import { INSERT_COLUMNS } from "./logs/rows.js";
import { AI_GATEWAY_PG_MIGRATIONS } from "./pg-migrations.js";
import { AI_GATEWAY_MIGRATIONS } from "./sqlite-migrations.js";

/**
 * The AI gateway for `edgecli state copy`: gateways with their settings, and logs with their bodies. A log's `seq`
 * is assigned by the target (logs are read in id order, and ids are ULIDs: creation order), so paging by it keeps
 * working after the copy. PostgreSQL's per-gateway `log_counts` are not copied: the log store counts a gateway's
 * logs the first time it needs the number. Rate-limit windows are not state worth carrying (at most a minute old).
 * Stored provider keys are carried sealed, as they are, like worker secrets: the target opens them with the same
 * secrets key (`EDGE_SECRETS_KEY`, which the command checks), and a key moved to another row would not open.
 */
export const aiGatewayCopier: AreaCopier = {
  name: "ai-gateway",
  sqlite: { database: "ai-gateway", migrations: AI_GATEWAY_MIGRATIONS },
  postgres: { schema: "ai_gateway", migrations: AI_GATEWAY_PG_MIGRATIONS },
  tables: [
    { table: "gateways", columns: ["account_id", "id", "settings", "created_at", "modified_at"], key: ["account_id", "id"] },
    {
      table: "provider_keys",
      columns: ["account_id", "gateway_id", "id", "provider_slug", "alias", "default_config", "secret_id", "secret", "modified_at"],
      key: ["account_id", "gateway_id", "id"],
    },
    {
      table: "logs",
      // Every column a log is written with, and what feedback adds to it later.
      columns: [...INSERT_COLUMNS, "feedback", "score"],
      key: ["id"],
      generatedId: "seq",
      large: ["request_body", "response_body"],
    },
  ],
};
