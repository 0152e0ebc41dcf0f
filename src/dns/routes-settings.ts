import type { FastifyInstance } from "fastify";
import { EdgeError } from "../core/errors.js";
import { ok } from "../core/http/envelope.js";
import { requireAccount } from "../core/http/app.js";
import { zoneOf, type DnsApiContext } from "./context.js";
import { DnsCodes } from "./errors.js";
import { defaultZoneSettings, patchSettings, settingsView } from "./soa.js";

type ZoneParams = { Params: { zone_id: string } };
type AccountParams = { Params: { account_id: string } };

export function registerSettingsRoutes(app: FastifyInstance, ctx: DnsApiContext): void {
  const ns = ctx.cfg.nameServers;

  app.get<ZoneParams>("/zones/:zone_id/dns_settings", async (req) => ok(settingsView(zoneOf(ctx, req, req.params.zone_id, "dns_read").zone.settings, ns)));

  app.patch<ZoneParams>("/zones/:zone_id/dns_settings", async (req) => {
    const zs = zoneOf(ctx, req, req.params.zone_id, "dns_edit");
    const settings = patchSettings(zs.zone.settings, req.body);
    ctx.state.updateZone(zs, { settings });
    return ok(settingsView(zs.zone.settings, ns));
  });

  // Account defaults: applied to zones created afterwards.
  app.get<AccountParams>("/accounts/:account_id/dns_settings", async (req) => {
    requireAccount(req, req.params.account_id, "dns_read");
    const s = ctx.state.store.accountSettings(req.params.account_id) ?? defaultZoneSettings();
    return ok({ zone_defaults: settingsView(s, ns) });
  });

  app.patch<AccountParams>("/accounts/:account_id/dns_settings", async (req) => {
    requireAccount(req, req.params.account_id, "dns_edit");
    const body = (req.body ?? {}) as Record<string, unknown>;
    const patch = body.zone_defaults ?? body;
    if (typeof patch !== "object" || patch === null) throw new EdgeError(400, DnsCodes.soa, "zone_defaults must be an object", { pointer: "/zone_defaults" });
    const s = patchSettings(ctx.state.store.accountSettings(req.params.account_id) ?? defaultZoneSettings(), patch);
    ctx.state.store.putAccountSettings(req.params.account_id, s);
    return ok({ zone_defaults: settingsView(s, ns) });
  });
}
