import type { FastifyRequest } from "fastify";
import type { Permission } from "../core/auth/permissions.js";
import { requireAccount } from "../core/http/app.js";
import type { DnsConfig } from "./config.js";
import { zoneNotFound } from "./errors.js";
import type { DnsState, ZoneState } from "./state.js";

/** What the DNS routes share. */
export interface DnsApiContext {
  state: DnsState;
  cfg: DnsConfig;
}

/**
 * The zone a request names, if the caller may use it. A zone of an account the caller cannot read is
 * answered exactly like a missing one, so zone ids cannot be probed; read-only callers get 403 on writes.
 */
export function zoneOf(ctx: DnsApiContext, req: FastifyRequest, zoneId: string, permission: Permission): ZoneState {
  const zs = ctx.state.byId.get(zoneId);
  if (!zs || !req.principal.can(zs.zone.account_id, "dns_read")) throw zoneNotFound();
  requireAccount(req, zs.zone.account_id, permission);
  return zs;
}
