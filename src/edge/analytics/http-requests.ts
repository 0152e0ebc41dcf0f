import type { GroupedDatasetSpec, Rollups } from "../../analytics/service.js";

/** The rollup dataset of tenants' HTTP traffic, per zone. */
export const HTTP_REQUESTS = "http_requests";

/** One request of a tenant's hostname, as the edge saw it end. */
export interface HttpRequestEvent {
  zoneId: string;
  accountId: string;
  host: string;
  method: string;
  status: number;
  /** `cf-cache-status` lowercased ("hit", "miss", …), "dynamic" when the answer did not go through the cache. */
  cacheStatus: string;
  /** Bytes written to the client for this answer. */
  bytes: number;
  /** Whether the request is a visit as hosted counts them: no Referer, or one naming another host. */
  visit: boolean;
}

/** Records one request into the rollups (the edge calls it as each tenant request ends). */
export function recordHttpRequest(rollups: Rollups, e: HttpRequestEvent, atMs = Date.now()): void {
  rollups.record(HTTP_REQUESTS, e.zoneId, e.accountId, atMs, [e.host, e.method, String(e.status), e.cacheStatus], [e.bytes, e.visit ? 1 : 0]);
}

/**
 * `httpRequestsAdaptiveGroups` on `viewer.zones` (permission `analytics_read`): the zone's proxied traffic (Workers,
 * proxy, cache and the edge's error pages for its hostnames) from the per-minute rollups, `count` and `sum {
 * edgeResponseBytes visits }` by `dimensions { clientRequestHTTPHost clientRequestHTTPMethodName edgeResponseStatus
 * cacheStatus datetime… }`. The columns are recordHttpRequest's: d1..d4 the dimensions, s1 the bytes, s2 the visits.
 */
export const httpRequestsSpec: GroupedDatasetSpec = {
  field: "httpRequestsAdaptiveGroups",
  scope: "zone",
  typeName: "ZoneHttpRequestsAdaptiveGroups",
  dataset: HTTP_REQUESTS,
  permission: "analytics_read",
  count: true,
  dimensions: {
    clientRequestHTTPHost: { column: 0, type: "String" },
    clientRequestHTTPMethodName: { column: 1, type: "String" },
    edgeResponseStatus: { column: 2, type: "Int" },
    cacheStatus: { column: 3, type: "String" },
  },
  sums: {
    edgeResponseBytes: { from: 0 },
    visits: { from: 1 },
  },
};
