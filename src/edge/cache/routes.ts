import type { FastifyInstance, FastifyRequest } from "fastify";
import { ok } from "../../core/http/envelope.js";
import type { AccountResolver } from "../../core/http/guard.js";
import { EdgeErrors } from "../errors.js";
import type { EdgeZones } from "../ports.js";
import type { PurgeSelector } from "./disk-index.js";
import { perRequestLimits, type PurgeLimits } from "./purge-limits.js";
import { parsePurge } from "./purge.js";

type ZoneRequest = FastifyRequest<{ Params: { zone_id: string } }>;

/**
 * The guard's account for a purge: the zone's. A zone of an account where the caller holds neither Cache Purge nor
 * DNS read is answered like a missing one (404), so zone ids of other accounts cannot be probed.
 */
function zoneAccount(zones: EdgeZones): AccountResolver {
  return (req) => {
    const accountId = zones.accountOf((req as ZoneRequest).params.zone_id);
    if (!accountId || !(req.principal.can(accountId, "cache_purge") || req.principal.can(accountId, "dns_read"))) throw EdgeErrors.zoneNotFound();
    return accountId;
  };
}

/**
 * `POST /zones/{id}/purge_cache` (hosted shape): the answer comes once every node was told (docs/cache.md). A purge
 * over the account's rate limit (`limits`, the plan's, counted for the whole cluster) is answered 429 with Retry-After
 * and done nowhere; one naming more items than the plan takes per request is refused (400, 1015) before it counts.
 */
export function registerPurgeRoutes(
  app: FastifyInstance,
  zones: EdgeZones,
  limits: PurgeLimits,
  purge: (zoneId: string, selector: PurgeSelector) => Promise<void>,
): void {
  app.post<{ Params: { zone_id: string } }>(
    "/zones/:zone_id/purge_cache",
    { config: { permission: "cache_purge", account: zoneAccount(zones) } },
    async (req, reply) => {
      const name = zones.nameOf(req.params.zone_id);
      const accountId = zones.accountOf(req.params.zone_id);
      if (!name || !accountId) throw EdgeErrors.zoneNotFound();
      const selector = parsePurge(req.body, name, perRequestLimits(limits.plan));
      const wait = await limits.take(accountId, selector);
      if (wait > 0) {
        void reply.header("retry-after", String(wait));
        throw EdgeErrors.purgeRateLimited();
      }
      await purge(req.params.zone_id, selector);
      return ok({ id: req.params.zone_id });
    },
  );
}
