import type { FastifyInstance } from "fastify";
import { ok } from "../../core/http/envelope.js";
import type { DnsConfig } from "../config.js";
import { DnsErrors } from "../errors.js";
import { patchSettings, settingsView } from "../zones/soa.js";
import type { ZoneService } from "../zones/zone-service.js";
import { zoneAccount, zoneOf } from "./zone-access.js";

type ZoneParams = { Params: { zone_id: string } };
type AccountParams = { Params: { account_id: string } };

export function registerSettingsRoutes(app: FastifyInstance, zones: ZoneService, cfg: DnsConfig): void {
  const ns = cfg.nameServers;

  app.get<ZoneParams>("/zones/:zone_id/dns_settings", { config: { permission: "dns_read", account: zoneAccount(zones) } }, async (req) =>
    ok(settingsView(zoneOf(zones, req).zone.settings, ns)),
  );

  app.patch<ZoneParams>("/zones/:zone_id/dns_settings", { config: { permission: "dns_edit", account: zoneAccount(zones) } }, async (req) => {
    const zs = zoneOf(zones, req);
    if (zs.zone.type === "secondary") throw DnsErrors.secondaryReadOnly("SOA and DNS settings");
    const zone = await zones.updateZone(zs, (current) => ({ settings: patchSettings(current.settings, req.body) }));
    return ok(settingsView(zone.settings, ns));
  });

  // Account defaults: applied to zones created afterwards.
  app.get<AccountParams>("/accounts/:account_id/dns_settings", { config: { permission: "dns_read" } }, async (req) =>
    ok({ zone_defaults: settingsView(await zones.accountSettings(req.params.account_id), ns) }),
  );

  app.patch<AccountParams>("/accounts/:account_id/dns_settings", { config: { permission: "dns_edit" } }, async (req) => {
    const body = (req.body ?? {}) as Record<string, unknown>;
    const patch = body.zone_defaults ?? body;
    if (typeof patch !== "object" || patch === null) throw DnsErrors.zoneDefaultsNotObject();
    const settings = await zones.updateAccountSettings(req.params.account_id, (current) => patchSettings(current, patch));
    return ok({ zone_defaults: settingsView(settings, ns) });
  });
}
