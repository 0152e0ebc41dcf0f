import type { AreaCopier } from "../state-copy/area.js";
import { IDENTITY_PG_MIGRATIONS } from "./pg-migrations.js";
import { IDENTITY_MIGRATIONS } from "./sqlite-migrations.js";

/**
 * Identity for `edgecli state copy`: accounts, users, memberships, global keys and API tokens, ids kept. Keys and
 * tokens exist only as their hashes, carried as they are: every credential works the same on the other side.
 */
export const identityCopier: AreaCopier = {
  name: "identity",
  sqlite: { database: "core", migrations: IDENTITY_MIGRATIONS },
  postgres: { schema: "core", migrations: IDENTITY_PG_MIGRATIONS },
  tables: [
    { table: "accounts", columns: ["id", "name", "created_on"], key: ["id"] },
    { table: "users", columns: ["id", "email", "created_on"], key: ["id"] },
    { table: "memberships", columns: ["user_id", "account_id"], key: ["user_id", "account_id"] },
    { table: "global_keys", columns: ["user_id", "key_hash"], key: ["user_id"] },
    {
      table: "api_tokens",
      columns: ["id", "user_id", "name", "token_hash", "status", "grants", "issued_on", "modified_on", "last_used_on", "not_before", "expires_on"],
      key: ["id"],
    },
  ],
};
