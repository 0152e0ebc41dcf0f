import type { EdgeService, ServiceContext } from "../core/service.js";
import { readAiGatewayConfig, serveOptions, SHIPPED_PRICES_FILE } from "./config.js";
import { GatewayDirectory } from "./gateways/directory.js";
import { registerGatewayRoutes } from "./gateways/routes.js";
import { LogCounts } from "./logs/counts.js";
import { LogQueue } from "./logs/queue.js";
import { registerLogRoutes } from "./logs/routes.js";
import { PriceTable } from "./providers/prices.js";
import { ProviderRegistry } from "./providers/registry.js";
import { GatewayProxy } from "./proxy/gateway-proxy.js";
import { RateLimiter } from "./proxy/rate-limiter.js";
import { ResponseCache } from "./proxy/response-cache.js";
import { Upstreams } from "./proxy/upstream.js";
import { AI_GATEWAY_MIGRATIONS } from "./sqlite-migrations.js";
import { sqliteStores } from "./sqlite-store.js";

export function createAiGatewayService(ctx: ServiceContext): EdgeService {
  const config = readAiGatewayConfig(ctx.options(serveOptions));
  const providers = new ProviderRegistry(config.providerBaseUrls);
  const prices = PriceTable.load(SHIPPED_PRICES_FILE, config.pricesFile);
  const stores = sqliteStores(ctx.openDb("ai-gateway", AI_GATEWAY_MIGRATIONS));
  const logCounts = new LogCounts(stores.logs);
  const queue = new LogQueue(stores.logs, logCounts, ctx.log);
  const cache = new ResponseCache();
  const limiter = new RateLimiter();
  const upstreams = new Upstreams();
  /** A changed gateway starts with a fresh rate window and log count, and its cached answers go when it asks for that. */
  const gateways = new GatewayDirectory(stores.gateways, (g, dropCachedAnswers) => {
    limiter.forget(`${g.account_id}/${g.id}`);
    if (dropCachedAnswers) cache.dropPrefix(`${g.account_id}/${g.id}:`);
    logCounts.forget(g.account_id, g.id);
  });
  const proxy = new GatewayProxy({
    auth: ctx.auth,
    identities: ctx.identities,
    gateways,
    logCounts,
    providers,
    prices,
    upstreams,
    limiter,
    queue,
    cache,
    log: ctx.log,
    bodyLimit: ctx.config.core.bodyLimit,
  });

  return {
    name: "ai-gateway",
    registerApi(app) {
      registerGatewayRoutes(app, gateways);
      registerLogRoutes(app, { gateways, logs: stores.logs, queue, counts: logCounts });
    },
    handleRaw(req, res) {
      if (!req.url?.startsWith("/v1/")) return false;
      proxy.handle(req, res);
      return true;
    },
    async stop() {
      await queue.flush();
      await upstreams.close();
    },
  };
}
