import type { Gateway } from "./store.js";
import type { GatewaySettings } from "./schema.js";

/** A gateway as both stores keep it: its settings as one JSON column. */
export interface GatewayRow {
  account_id: string;
  id: string;
  settings: string;
  created_at: string;
  modified_at: string;
}

export const toGateway = (r: GatewayRow): Gateway => ({
  id: r.id,
  account_id: r.account_id,
  ...(JSON.parse(r.settings) as GatewaySettings),
  created_at: r.created_at,
  modified_at: r.modified_at,
});

/** The LIKE pattern (escape character `\`) of ids containing `search` as plain text: `_` and `%` match themselves. */
export const containing = (search: string): string => `%${search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
