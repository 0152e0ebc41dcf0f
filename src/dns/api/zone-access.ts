import type { FastifyRequest } from "fastify";
import type { AccountResolver } from "../../core/http/guard.js";
import { DnsErrors } from "../errors.js";
import type { ZoneService } from "../zones/zone-service.js";
import type { ZoneState } from "../zones/zone-state.js";

type ZoneRequest = FastifyRequest<{ Params: { zone_id: string } }>;

/**
 * The guard's account for /zones/:zone_id routes: the zone's. A zone of an account the caller cannot read is
 * answered exactly like a missing one (404), so zone ids cannot be probed; the guard then refuses a read-only
 * caller's writes (403).
 */
export function zoneAccount(zones: ZoneService): AccountResolver {
  return (req) => {
    const zs = zones.get((req as ZoneRequest).params.zone_id);
    if (!zs || !req.principal.can(zs.zone.account_id, "dns_read")) throw DnsErrors.zoneNotFound();
    return zs.zone.account_id;
  };
}

/** The zone of a route the guard let through (it may have been deleted since). */
export function zoneOf(zones: ZoneService, req: ZoneRequest): ZoneState {
  const zs = zones.get(req.params.zone_id);
  if (!zs) throw DnsErrors.zoneNotFound();
  return zs;
}
