import type { GroupedDatasetSpec, Rollups } from "../analytics/service.js";
import { costOf, type CustomCost } from "./metering/cost.js";
import type { PriceTable } from "./metering/prices.js";
import type { Usage } from "./metering/usage.js";

/** The rollup dataset of AI gateway requests, per account. */
export const GATEWAY_REQUESTS = "ai_gateway_requests";
/** Cost is kept in millionths of a US dollar (the rollups hold whole numbers). */
const COST_SCALE = 1e6;
/** A model name longer than this is cut (it comes from the request). */
const MAX_MODEL = 128;

/** One request through a gateway, as the proxy saw it end. */
export interface GatewayRequest {
  accountId: string;
  gateway: string;
  provider: string;
  model: string;
  cached: boolean;
  /** Whether the gateway's cache was looked up for it (its caching was on): a miss when not `cached`. */
  cacheLookup: boolean;
  errored: boolean;
  tokensIn: number;
  tokensOut: number;
  /** US dollars, 0 when unknown. */
  cost: number;
}

/** Where the proxy tells its requests, and the prices they are costed with (attached by platform.ts). */
export interface GatewayRequestCounter {
  listener?: (e: GatewayRequest) => void;
  prices: PriceTable;
}

/** The request of an answer: its usage priced as the logs price it (a cached answer costs nothing). */
export function gatewayRequestOf(
  base: { accountId: string; gateway: string; provider: string; requestModel: string | null },
  usage: Usage,
  outcome: { cached: boolean; cacheLookup: boolean; errored: boolean },
  prices: PriceTable,
  custom?: CustomCost,
): GatewayRequest {
  const cost = outcome.cached ? 0 : (costOf(usage, prices, custom).cost ?? 0);
  return {
    accountId: base.accountId,
    gateway: base.gateway,
    provider: base.provider,
    model: (usage.model ?? base.requestModel ?? "").slice(0, MAX_MODEL),
    ...outcome,
    tokensIn: usage.tokensIn ?? 0,
    tokensOut: usage.tokensOut ?? 0,
    cost,
  };
}

/** Records one request into the rollups; a cached answer's tokens are its cached tokens (what the cache saved). */
export function recordGatewayRequest(rollups: Rollups, e: GatewayRequest, atMs = Date.now()): void {
  const c = e.cached ? 1 : 0;
  rollups.record(
    GATEWAY_REQUESTS,
    e.accountId,
    e.accountId,
    atMs,
    [e.gateway, e.provider, e.model],
    [c, e.errored ? 1 : 0, Math.round(e.cost * COST_SCALE), c * e.tokensIn, c * e.tokensOut, (1 - c) * e.tokensIn, (1 - c) * e.tokensOut],
  );
}

/**
 * `aiGatewayRequestsAdaptiveGroups` on `viewer.accounts` (permission `analytics_read`): `count`, `sum {
 * cachedRequests erroredRequests cost cachedTokensIn cachedTokensOut uncachedTokensIn uncachedTokensOut }` by
 * `dimensions { gateway provider model datetime… }`.
 */
export const aiGatewayRequestsSpec: GroupedDatasetSpec = {
  field: "aiGatewayRequestsAdaptiveGroups",
  scope: "account",
  typeName: "AccountAiGatewayRequestsAdaptiveGroups",
  dataset: GATEWAY_REQUESTS,
  permission: "analytics_read",
  count: true,
  dimensions: {
    gateway: { column: 0, type: "String" },
    provider: { column: 1, type: "String" },
    model: { column: 2, type: "String" },
  },
  sums: {
    cachedRequests: { from: 0 },
    erroredRequests: { from: 1 },
    cost: { from: 2, type: "Float", scale: COST_SCALE },
    cachedTokensIn: { from: 3 },
    cachedTokensOut: { from: 4 },
    uncachedTokensIn: { from: 5 },
    uncachedTokensOut: { from: 6 },
  },
};
