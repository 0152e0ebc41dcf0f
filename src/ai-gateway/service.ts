import { serveOptions } from "./commands.js";
import type { EdgeService, ServiceContext } from "../core/service.js";
import { registerGatewayRoutes } from "./gateway-routes.js";
import { gatewayMigrations, GatewayStore } from "./gateway-store.js";
import { LogQueue } from "./log-queue.js";
import { registerLogRoutes } from "./log-routes.js";
import { LogWriter } from "./log-store.js";
import { ProviderRegistry } from "./providers/registry.js";
import { Proxy } from "./proxy.js";
import { RateLimiter } from "./rate-limiter.js";
import { ResponseCache } from "./response-cache.js";
import { Upstreams } from "./upstream.js";

export function createAiGatewayService(ctx: ServiceContext): EdgeService {
  const providers = new ProviderRegistry((ctx.options(serveOptions)["provider-base-url"] as string[] | undefined) ?? []);
  const db = ctx.openDb("ai-gateway", gatewayMigrations);
  const gateways = new GatewayStore(db);
  const writer = new LogWriter(db);
  const queue = new LogQueue(writer, ctx.log);
  const cache = new ResponseCache();
  const limiter = new RateLimiter();
  const upstreams = new Upstreams();
  const proxy = new Proxy({
    auth: ctx.auth,
    identities: ctx.identities,
    gateways,
    providers,
    upstreams,
    limiter,
    writer,
    queue,
    cache,
    log: ctx.log,
    bodyLimit: ctx.config.core.bodyLimit,
  });

  /** A changed gateway starts with a fresh rate window, and its cached answers go when it asks for that. */
  const onChange = (accountId: string, id: string, invalidateCache: boolean) => {
    limiter.forget(`${accountId}/${id}`);
    if (invalidateCache) cache.dropPrefix(`${accountId}/${id}:`);
    writer.recount(accountId, id);
  };

  return {
    name: "ai-gateway",
    registerApi(app) {
      registerGatewayRoutes(app, gateways, onChange);
      registerLogRoutes(app, { db, gateways, queue, writer });
    },
    handleRaw(req, res) {
      if (!req.url?.startsWith("/v1/")) return false;
      proxy.handle(req, res);
      return true;
    },
    async stop() {
      queue.flush();
      await upstreams.close();
    },
  };
}
