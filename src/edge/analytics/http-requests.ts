import { GraphQLError } from "graphql";
import type { AnalyticsDataset, RollupGroup, RollupQuery, Rollups } from "../../analytics/service.js";

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

/** Dimension columns of the rollup (d1..d4) and sums (s1, s2). */
const DIM = { clientRequestHTTPHost: 0, clientRequestHTTPMethodName: 1, edgeResponseStatus: 2, cacheStatus: 3 } as const;
type DimName = keyof typeof DIM;
const TIME_DIMS = {
  datetime: "minute",
  datetimeMinute: "minute",
  datetimeFiveMinutes: "five_minutes",
  datetimeFifteenMinutes: "fifteen_minutes",
  datetimeHour: "hour",
  date: "day",
} as const;
type TimeDim = keyof typeof TIME_DIMS;

/** Records one request into the rollups (the edge calls it as each tenant request ends). */
export function recordHttpRequest(rollups: Rollups, e: HttpRequestEvent, atMs = Date.now()): void {
  rollups.record(HTTP_REQUESTS, e.zoneId, e.accountId, atMs, [e.host, e.method, String(e.status), e.cacheStatus], [e.bytes, e.visit ? 1 : 0]);
}

/** The largest `limit` (the hosted API's bound on adaptive groups). */
const MAX_LIMIT = 10_000;

interface HttpFilter {
  datetime_geq?: string;
  datetime_gt?: string;
  datetime_leq?: string;
  datetime_lt?: string;
  date_geq?: string;
  date_leq?: string;
  clientRequestHTTPHost?: string;
  clientRequestHTTPHost_neq?: string;
  clientRequestHTTPMethodName?: string;
  clientRequestHTTPMethodName_neq?: string;
  edgeResponseStatus?: number;
  edgeResponseStatus_neq?: number;
  cacheStatus?: string;
  cacheStatus_neq?: string;
}

const iso = (seconds: number) => new Date(seconds * 1000).toISOString().replace(".000Z", "Z");

function seconds(field: string, value: string): number {
  const t = Date.parse(value);
  if (Number.isNaN(t)) throw new GraphQLError(`filter.${field}: "${String(value).slice(0, 40)}" is not a time (use ISO 8601, 2024-09-01T00:00:00Z)`);
  return Math.floor(t / 1000);
}

/**
 * `httpRequestsAdaptiveGroups` on `viewer.zones`: the zone's proxied traffic (Workers, proxy, cache and the edge's
 * error pages for its hostnames) from the per-minute rollups, grouped by the dimensions the query selects, with
 * `count` and `sum { edgeResponseBytes visits }`. Times are the rollups' minutes: `datetime` is the minute's start.
 */
export function httpRequestsDataset(rollups: Rollups): AnalyticsDataset {
  return {
    field: "httpRequestsAdaptiveGroups",
    scope: "zone",
    signature:
      "(limit: uint64!, filter: ZoneHttpRequestsAdaptiveGroupsFilter_InputObject, orderBy: [ZoneHttpRequestsAdaptiveGroupsOrderBy!]): [ZoneHttpRequestsAdaptiveGroups!]!",
    typeDefs: `
      input ZoneHttpRequestsAdaptiveGroupsFilter_InputObject {
        datetime_geq: Time
        datetime_gt: Time
        datetime_leq: Time
        datetime_lt: Time
        date_geq: Date
        date_leq: Date
        clientRequestHTTPHost: String
        clientRequestHTTPHost_neq: String
        clientRequestHTTPMethodName: String
        clientRequestHTTPMethodName_neq: String
        edgeResponseStatus: Int
        edgeResponseStatus_neq: Int
        cacheStatus: String
        cacheStatus_neq: String
      }
      enum ZoneHttpRequestsAdaptiveGroupsOrderBy {
        count_ASC count_DESC
        datetime_ASC datetime_DESC datetimeMinute_ASC datetimeMinute_DESC datetimeFiveMinutes_ASC datetimeFiveMinutes_DESC
        datetimeFifteenMinutes_ASC datetimeFifteenMinutes_DESC datetimeHour_ASC datetimeHour_DESC date_ASC date_DESC
        clientRequestHTTPHost_ASC clientRequestHTTPHost_DESC clientRequestHTTPMethodName_ASC clientRequestHTTPMethodName_DESC
        edgeResponseStatus_ASC edgeResponseStatus_DESC cacheStatus_ASC cacheStatus_DESC
      }
      type ZoneHttpRequestsAdaptiveGroupsSum { edgeResponseBytes: uint64! visits: uint64! }
      type ZoneHttpRequestsAdaptiveGroupsDimensions {
        datetime: Time! datetimeMinute: Time! datetimeFiveMinutes: Time! datetimeFifteenMinutes: Time! datetimeHour: Time! date: Date!
        clientRequestHTTPHost: String! clientRequestHTTPMethodName: String! edgeResponseStatus: Int! cacheStatus: String!
      }
      type ZoneHttpRequestsAdaptiveGroups {
        count: uint64!
        sum: ZoneHttpRequestsAdaptiveGroupsSum!
        dimensions: ZoneHttpRequestsAdaptiveGroupsDimensions!
      }
    `,
    permission: "analytics_read",
    async resolve(zoneId, args, requested) {
      const limit = Number(args.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) throw new GraphQLError(`limit: must be a whole number from 1 to ${MAX_LIMIT}`);
      const f = (args.filter ?? {}) as HttpFilter;
      const now = Math.floor(Date.now() / 1000);
      let from = now - rollups.retentionSeconds;
      let to = now + 60;
      if (f.datetime_geq != null) from = Math.max(from, seconds("datetime_geq", f.datetime_geq));
      if (f.datetime_gt != null) from = Math.max(from, seconds("datetime_gt", f.datetime_gt) + 1);
      if (f.date_geq != null) from = Math.max(from, seconds("date_geq", `${f.date_geq}T00:00:00Z`));
      if (f.datetime_leq != null) to = Math.min(to, seconds("datetime_leq", f.datetime_leq) + 1);
      if (f.datetime_lt != null) to = Math.min(to, seconds("datetime_lt", f.datetime_lt));
      if (f.date_leq != null) to = Math.min(to, seconds("date_leq", `${f.date_leq}T00:00:00Z`) + 86_400);
      // A minute counts when its start is in the range (the rollups know no finer time).
      const fromMinute = Math.ceil(from / 60) * 60;
      if (to <= fromMinute) return [];

      const where: RollupQuery["where"][number][] = [];
      for (const name of Object.keys(DIM) as DimName[]) {
        const eq = f[name];
        const neq = f[`${name}_neq` as keyof HttpFilter];
        if (eq != null) where.push({ dim: DIM[name], op: "eq", value: String(eq) });
        if (neq != null) where.push({ dim: DIM[name], op: "neq", value: String(neq) });
      }
      const names = requested.dimensions;
      const groupBy: RollupGroup[] = names.map((n) => (n in TIME_DIMS ? { time: TIME_DIMS[n as TimeDim] } : { dim: DIM[n as DimName] }));
      const orderBy = ((args.orderBy ?? []) as string[]).map((o) => {
        const desc = o.endsWith("_DESC");
        const field = o.slice(0, o.lastIndexOf("_"));
        if (field === "count") return { by: "count" as const, desc };
        const group = names.indexOf(field);
        if (group < 0) throw new GraphQLError(`orderBy: ${o} orders by ${field}, which the query does not select under dimensions`);
        return { by: { group }, desc };
      });
      const groups = await rollups.query({ dataset: HTTP_REQUESTS, scope: zoneId, from: fromMinute, to, where, groupBy, orderBy, limit });
      return groups.map((g) => {
        const dimensions: Record<string, unknown> = {};
        names.forEach((n, i) => {
          const k = g.keys[i];
          if (n === "date") dimensions[n] = iso(Number(k)).slice(0, 10);
          else if (n in TIME_DIMS) dimensions[n] = iso(Number(k));
          else if (n === "edgeResponseStatus") dimensions[n] = Number(k);
          else dimensions[n] = k;
        });
        return { count: g.count, sum: { edgeResponseBytes: g.sums[0], visits: g.sums[1] }, dimensions };
      });
    },
  };
}
