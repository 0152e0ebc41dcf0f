import type { AreaCopier, NodeOnlyState } from "../core/state-copy/area.js";
import { DNS_PG_MIGRATIONS } from "./pg-migrations.js";
import { DNS_MIGRATIONS } from "./sqlite-migrations.js";

/**
 * DNS for `edgecli state copy`: zones with their serials (ids kept, so every node and the copy serve the same SOA
 * serial), records and per-account settings. Nothing of DNS is a body.
 */
export const dnsCopier: AreaCopier = {
  name: "dns",
  sqlite: { database: "dns", migrations: DNS_MIGRATIONS },
  postgres: { schema: "dns", migrations: DNS_PG_MIGRATIONS },
  tables: [
    {
      table: "zones",
      columns: ["id", "account_id", "name", "paused", "created_on", "modified_on", "activated_on", "serial", "settings", "record_count"],
      key: ["id"],
    },
    {
      table: "records",
      columns: [
        "id",
        "zone_id",
        "name",
        "type",
        "content",
        "data",
        "priority",
        "ttl",
        "proxied",
        "comment",
        "tags",
        "settings",
        "created_on",
        "modified_on",
        "comment_modified_on",
        "tags_modified_on",
      ],
      key: ["id"],
    },
    { table: "account_settings", columns: ["account_id", "settings"], key: ["account_id"] },
  ],
};

/** DNSSEC keys and zone transfer settings stay in one node's files (docs/scale-out.md): `edgecli state copy` cannot carry them. */
export const dnsNodeOnly: readonly NodeOnlyState[] = [
  { database: "dnssec", count: "SELECT count(*) AS n FROM zones WHERE status = 'active'", what: "zones signed with DNSSEC" },
  {
    database: "dns-transfers",
    count: "SELECT (SELECT count(*) FROM tsigs) + (SELECT count(*) FROM peers) + (SELECT count(*) FROM outgoing) + (SELECT count(*) FROM incoming) AS n",
    what: "zone transfer settings (TSIG keys, peers, outgoing and incoming transfers)",
  },
];
