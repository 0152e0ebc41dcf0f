import { SecretBox } from "../core/secret-box.js";
import type { EdgeService, ServiceContext } from "../core/service.js";
import { readAiGatewayConfig, serveOptions, SHIPPED_PRICES_FILE } from "./config.js";
import { GatewayDirectory } from "./gateways/directory.js";
import { registerGatewayRoutes } from "./gateways/routes.js";
import { ProviderKeyring } from "./keys/keyring.js";
import { registerProviderKeyRoutes } from "./keys/routes.js";
import { LogCounts } from "./logs/counts.js";
import { GatewayMetrics } from "./metrics.js";
import { LogQueue } from "./logs/queue.js";
import { registerLogRoutes } from "./logs/routes.js";
import { AIG_BUS_AREA, readNotice } from "./notices.js";
import { AI_GATEWAY_PG_MIGRATIONS } from "./pg-migrations.js";
import { PgRateLimiter } from "./proxy/pg-rate-limiter.js";
import { pgStores } from "./pg-store.js";
import { PriceTable } from "./metering/prices.js";
import { ProviderRegistry } from "./providers/registry.js";
import { GatewayProxy } from "./proxy/gateway-proxy.js";
import { MemoryRateLimiter, type RateLimiter } from "./proxy/rate-limiter.js";
import { ResponseCache } from "./proxy/response-cache.js";
import { Upstreams } from "./proxy/upstream.js";
import { AI_GATEWAY_MIGRATIONS } from "./sqlite-migrations.js";
import { sqliteStores } from "./sqlite-store.js";
import type { AiGatewayStores } from "./store.js";
import type { GatewayRequest, GatewayRequestCounter } from "./analytics.js";

/** Rate windows no count reads any more are swept this often (PostgreSQL). */
const RATE_SWEEP_MS = 60_000;

/**
 * The stores and the rate limiter of this node's backend: SQLite and counters in memory (one node), or PostgreSQL
 * (schema `ai_gateway`) with one counter per gateway and window for all nodes.
 */
function openBackend(
  ctx: ServiceContext,
  box: SecretBox,
  prices: PriceTable,
): { stores: AiGatewayStores; limiter: RateLimiter; sweep?: () => Promise<number>; close?: () => Promise<void> } {
  const pg = ctx.openPostgres("ai_gateway", AI_GATEWAY_PG_MIGRATIONS);
  if (pg) {
    const limiter = new PgRateLimiter(pg);
    return { stores: pgStores(pg, ctx.bus, box, prices), limiter, sweep: () => limiter.sweep() };
  }
  // Logs are written by a thread of their own, off the event loop that serves the requests.
  const stores = sqliteStores(ctx.openDb("ai-gateway", AI_GATEWAY_MIGRATIONS), { writerThread: true, box, prices });
  return { stores, limiter: new MemoryRateLimiter(), close: stores.close };
}

/** The AI gateway as the platform wires it: the edge's `/v1/` traffic, and where its requests are counted. */
export interface AiGatewayService extends EdgeService {
  /** Where each request is told as it ends, with tokens and cost (aiGatewayRequestsAdaptiveGroups, platform.ts). */
  attachAnalytics(listener: (e: GatewayRequest) => void): void;
}

export function createAiGatewayService(ctx: ServiceContext): AiGatewayService {
  const config = readAiGatewayConfig(ctx.options(serveOptions));
  const providers = new ProviderRegistry(config.providerBaseUrls);
  const prices = PriceTable.load(SHIPPED_PRICES_FILE, config.pricesFile);
  // Stored provider keys are sealed with the platform's secrets key, as worker secrets are.
  const { stores, limiter, sweep, close: closeBackend } = openBackend(ctx, SecretBox.load(ctx.config.stateDir), prices);
  const keyring = new ProviderKeyring(stores.keys);
  const logCounts = new LogCounts(stores.logs);
  const queue = new LogQueue(stores.logs, logCounts, ctx.log);
  // Cached answers stay on the node that got them (see docs/ai-gateway.md, "On PostgreSQL"); changes reach every node.
  const cache = new ResponseCache();
  const upstreams = new Upstreams();
  /** A changed gateway starts with a fresh rate window and log count, and its cached answers go when it asks for that. */
  const gateways = new GatewayDirectory(stores.gateways, (accountId, gatewayId, dropCachedAnswers) => {
    limiter.forget(accountId, gatewayId);
    if (dropCachedAnswers) cache.dropPrefix(`${accountId}/${gatewayId}:`);
    logCounts.forget(accountId, gatewayId);
    keyring.forget(accountId, gatewayId); // a deleted gateway's keys went with it
  });
  // Changes made through other nodes (this node's own were applied when it made them); after a resync, everything.
  ctx.bus.subscribe(AIG_BUS_AREA, (event) => {
    if (event.type === "resync") {
      gateways.forgetAll();
      logCounts.forgetAll();
      keyring.forgetAll();
      cache.clear();
      return;
    }
    if (event.origin === ctx.bus.nodeId) return;
    const notice = readNotice(event.what);
    if (notice?.kind === "gateway") gateways.changedElsewhere(notice.accountId, notice.gatewayId, notice.dropAnswers);
    else if (notice?.kind === "logs") logCounts.forget(notice.accountId, notice.gatewayId);
    else if (notice?.kind === "keys") keyring.forget(notice.accountId, notice.gatewayId);
  });
  // Prometheus' counts (metrics.ts) take each request from the same event as the analytics rollups.
  const metrics = ctx.metrics && new GatewayMetrics(ctx.metrics, providers.ids());
  const requests: GatewayRequestCounter = { prices, listener: metrics && ((e) => metrics.count(e)) };
  const proxy = new GatewayProxy({
    requests,
    auth: ctx.auth,
    identities: ctx.identities,
    gateways,
    logCounts,
    providers,
    upstreams,
    keys: keyring,
    limiter,
    queue,
    cache,
    log: ctx.log,
    bodyLimit: ctx.config.core.bodyLimit,
  });
  let sweeper: NodeJS.Timeout | undefined;

  return {
    name: "ai-gateway",
    attachAnalytics(listener) {
      requests.listener = metrics
        ? (e) => {
            metrics.count(e);
            listener(e);
          }
        : listener;
    },
    registerApi(app) {
      registerGatewayRoutes(app, gateways);
      registerLogRoutes(app, { gateways, logs: stores.logs, queue, counts: logCounts });
      registerProviderKeyRoutes(app, { gateways, keyring, providers });
    },
    handleRaw(req, res) {
      if (!req.url?.startsWith("/v1/")) return false;
      proxy.handle(req, res);
      return true;
    },
    async start() {
      if (!sweep) return;
      sweeper = setInterval(() => void sweep().catch((err: unknown) => ctx.log.warn({ err }, "ai-gateway: sweeping old rate windows failed")), RATE_SWEEP_MS);
      sweeper.unref();
    },
    async stop() {
      clearInterval(sweeper);
      await queue.close();
      await closeBackend?.();
      await upstreams.close();
    },
  };
}
