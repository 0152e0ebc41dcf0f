import type { AnalyticsDataset } from "../analytics/service.js";
import { R2Errors } from "./errors.js";
import type { R2BucketUsage, R2Store } from "./store.js";

/** The largest `limit` a query may ask (the hosted API's bound on adaptive groups). */
const MAX_LIMIT = 10_000;

interface StorageFilter {
  datetime?: string;
  datetime_geq?: string;
  datetime_gt?: string;
  datetime_leq?: string;
  datetime_lt?: string;
  bucketName?: string;
}
type StorageOrder = "datetime_ASC" | "datetime_DESC" | "bucketName_ASC" | "bucketName_DESC";

/** A `Time` of the filter, in ms since the epoch; refused by name when it is not a time. */
function timeOf(field: string, value: string | undefined): number | undefined {
  if (value === undefined || value === null) return undefined;
  const t = Date.parse(value);
  if (Number.isNaN(t)) throw R2Errors.analyticsFilter(`filter.${field}: "${String(value).slice(0, 40)}" is not a time (use ISO 8601, 2024-09-01T00:00:00Z)`);
  return t;
}

/**
 * R2's storage dataset of the GraphQL Analytics API, `r2StorageAdaptiveGroups` (what `wrangler r2 bucket info` reads
 * for a bucket's object count and size): one group per bucket of the account with `max { objectCount payloadSize
 * metadataSize uploadCount }` and `dimensions { datetime bucketName }`. This platform keeps no history of these
 * numbers: a group is the bucket as it is now, dated at the start of the current minute (as a sample the hosted
 * platform takes now and then), so a filter whose time range leaves out that minute has no groups. Not dated to the
 * second: wrangler ends its range at its own "now", which the platform's clock passes while the request travels, and
 * a group dated a moment later than the range's end was left out (`wrangler r2 bucket info` then showed 0 objects).
 */
export function r2StorageDataset(store: Pick<R2Store, "bucketUsage">): AnalyticsDataset {
  return {
    field: "r2StorageAdaptiveGroups",
    signature: "(limit: uint64!, filter: R2StorageAdaptiveGroupsFilter_InputObject, orderBy: [R2StorageAdaptiveGroupsOrderBy!]): [R2StorageAdaptiveGroups!]!",
    typeDefs: `
      input R2StorageAdaptiveGroupsFilter_InputObject {
        datetime: Time
        datetime_geq: Time
        datetime_gt: Time
        datetime_leq: Time
        datetime_lt: Time
        bucketName: String
      }
      enum R2StorageAdaptiveGroupsOrderBy { datetime_ASC datetime_DESC bucketName_ASC bucketName_DESC }
      type R2StorageAdaptiveGroupsMax { objectCount: uint64! payloadSize: uint64! metadataSize: uint64! uploadCount: uint64! }
      type R2StorageAdaptiveGroupsDimensions { datetime: Time! bucketName: String! }
      type R2StorageAdaptiveGroups { max: R2StorageAdaptiveGroupsMax! dimensions: R2StorageAdaptiveGroupsDimensions! }
    `,
    permission: "r2_read",
    async resolve(accountId, args) {
      const limit = Number(args.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) throw R2Errors.analyticsFilter(`limit: must be a whole number from 1 to ${MAX_LIMIT}`);
      const filter = (args.filter ?? {}) as StorageFilter;
      const now = Math.floor(Date.now() / 60_000) * 60_000;
      const inRange =
        (timeOf("datetime", filter.datetime) ?? now) === now &&
        (timeOf("datetime_geq", filter.datetime_geq) ?? -Infinity) <= now &&
        (timeOf("datetime_gt", filter.datetime_gt) ?? -Infinity) < now &&
        (timeOf("datetime_leq", filter.datetime_leq) ?? Infinity) >= now &&
        (timeOf("datetime_lt", filter.datetime_lt) ?? Infinity) > now;
      if (!inRange) return [];
      const usage = await store.bucketUsage(accountId, filter.bucketName ?? undefined);
      const order = ((args.orderBy ?? []) as StorageOrder[]).find((o) => o.startsWith("bucketName_"));
      if (order === "bucketName_DESC") usage.reverse();
      const datetime = new Date(now).toISOString().replace(".000Z", "Z");
      return usage.slice(0, limit).map((u: R2BucketUsage) => ({
        max: { objectCount: u.objectCount, payloadSize: u.payloadSize, metadataSize: u.metadataSize, uploadCount: u.uploadCount },
        dimensions: { datetime, bucketName: u.bucketName },
      }));
    },
  };
}
