import type { GroupedDatasetSpec, Rollups } from "../analytics/service.js";
import type { QueryCount } from "./server/query-counts.js";
import { QUESTION_TYPE_NAMES, responseCodeName } from "./wire-names.js";

/** The rollup dataset of DNS queries, per zone. */
export const DNS_QUERIES = "dns_queries";

/** A question type's name as hosted gives it in `queryType`; any other is `TYPE<n>` (RFC 3597's spelling). */
const queryTypeName = (n: number) => QUESTION_TYPE_NAMES[n] ?? `TYPE${n}`;

/**
 * Records the answers a process counted into the rollups, each under the zone its name is at or under (`zoneOf`,
 * DNS's zones); a name of no zone (answered REFUSED) belongs to no tenant and is left out. Query names are bounded
 * by the recorder's cardinality cap (a flood of random names counts as "(other)").
 */
export function recordDnsQueries(
  rollups: Rollups,
  zoneOf: (name: string) => { id: string; accountId: string } | undefined,
  counts: readonly QueryCount[],
  protocol: "udp" | "tcp",
  atMs = Date.now(),
): void {
  for (const [name, qtype, rcode, n] of counts) {
    const zone = zoneOf(name);
    if (!zone) continue;
    rollups.record(DNS_QUERIES, zone.id, zone.accountId, atMs, [name, queryTypeName(qtype), responseCodeName(rcode), protocol], [], n);
  }
}

/**
 * `dnsAnalyticsAdaptiveGroups` on `viewer.zones` (permission `analytics_read`): the zone's answered queries, `count`
 * by `dimensions { queryName queryType responseCode protocol datetime… }`. Answers the native UDP path
 * (src/dns/server/udp/native) sends from its own cache are not counted (see docs/observability.md).
 */
export const dnsAnalyticsSpec: GroupedDatasetSpec = {
  field: "dnsAnalyticsAdaptiveGroups",
  scope: "zone",
  typeName: "ZoneDnsAnalyticsAdaptiveGroups",
  dataset: DNS_QUERIES,
  permission: "analytics_read",
  count: true,
  dimensions: {
    queryName: { column: 0, type: "String" },
    queryType: { column: 1, type: "String" },
    responseCode: { column: 2, type: "String" },
    protocol: { column: 3, type: "String" },
  },
  sums: {},
};
