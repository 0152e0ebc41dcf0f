import type { EdgeService, ServiceContext } from "../../core/service.js";
import type { CacheRules, EdgeZones } from "../ports.js";
import { CacheRulesets } from "./cache-rules.js";
import { loadExpressionCompiler } from "./expression/compiler.js";
import { RULES_PG_MIGRATIONS } from "./pg-migrations.js";
import { PgCacheRulesStore, RULES_AREA } from "./pg-store.js";
import { registerRulesRoutes } from "./routes.js";
import { RULES_MIGRATIONS } from "./sqlite-migrations.js";
import { SqliteCacheRulesStore } from "./sqlite-store.js";

/**
 * Cache Rules: the hosted Rulesets API for the phase http_request_cache_settings, and the port the cache asks
 * (`rules.settingsFor`), kept in memory and current on every node by the bus. `zones` is DNS's narrow port (a zone's
 * account, zone deletions).
 */
export function createCacheRulesService(ctx: ServiceContext, deps: { zones: EdgeZones }): EdgeService & { rules: CacheRules } {
  const log = ctx.log.child({ service: "edge-rules" });
  let warmTimer: NodeJS.Timeout | undefined;
  const pg = ctx.openPostgres(RULES_AREA, RULES_PG_MIGRATIONS);
  const rulesets = new CacheRulesets(
    pg ? new PgCacheRulesStore(pg, ctx.bus) : new SqliteCacheRulesStore(ctx.openDb("edge-rules", RULES_MIGRATIONS), ctx.bus),
    log,
  );
  // A deleted zone's rules go with it: a zone of the same name made later starts with none.
  deps.zones.onDeleted(
    (zoneId) => void rulesets.zoneDeleted(zoneId).catch((err: unknown) => log.error({ err, zoneId }, "cache rules of a deleted zone not removed")),
  );
  return {
    name: "edge-rules",
    rules: rulesets,
    async registerApi(app) {
      await rulesets.load();
      registerRulesRoutes(app, deps.zones, rulesets);
    },
    async start() {
      rulesets.follow(ctx.bus);
      // A change made elsewhere between the first read and the subscription is not missed.
      await rulesets.load();
      // Without stored rules the compiler is not needed yet: it loads once the start is done, in the background, so
      // that the first rules write does not wait for it (expression/compiler.ts).
      warmTimer = setTimeout(() => void loadExpressionCompiler().catch((err: unknown) => log.error({ err }, "cache rules compiler not loaded")), 0);
      warmTimer.unref();
    },
    async stop() {
      clearTimeout(warmTimer);
      rulesets.stop();
    },
  };
}
