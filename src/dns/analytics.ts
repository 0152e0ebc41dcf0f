import type { GroupedDatasetSpec, Rollups } from "../analytics/service.js";
import type { QueryCount } from "./server/query-counts.js";

/** The rollup dataset of DNS queries, per zone. */
export const DNS_QUERIES = "dns_queries";

/** Record types by number, as hosted names them in `queryType`; any other is `TYPE<n>` (RFC 3597's spelling). */
const QTYPES: Readonly<Record<number, string>> = {
  1: "A",
  2: "NS",
  5: "CNAME",
  6: "SOA",
  12: "PTR",
  13: "HINFO",
  15: "MX",
  16: "TXT",
  28: "AAAA",
  29: "LOC",
  33: "SRV",
  35: "NAPTR",
  37: "CERT",
  39: "DNAME",
  43: "DS",
  44: "SSHFP",
  46: "RRSIG",
  47: "NSEC",
  48: "DNSKEY",
  50: "NSEC3",
  51: "NSEC3PARAM",
  52: "TLSA",
  53: "SMIMEA",
  59: "CDS",
  60: "CDNSKEY",
  61: "OPENPGPKEY",
  64: "SVCB",
  65: "HTTPS",
  99: "SPF",
  251: "IXFR",
  252: "AXFR",
  255: "ANY",
  256: "URI",
  257: "CAA",
};
const RCODES: Readonly<Record<number, string>> = { 0: "NOERROR", 1: "FORMERR", 2: "SERVFAIL", 3: "NXDOMAIN", 4: "NOTIMP", 5: "REFUSED" };

export const queryTypeName = (n: number) => QTYPES[n] ?? `TYPE${n}`;
export const responseCodeName = (n: number) => RCODES[n] ?? `RCODE${n}`;

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
