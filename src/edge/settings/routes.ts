import type { FastifyInstance, FastifyRequest } from "fastify";
import { ok } from "../../core/http/envelope.js";
import type { AccountResolver } from "../../core/http/guard.js";
import { EdgeErrors } from "../errors.js";
import type { EdgeZones } from "../ports.js";
import type { ZoneSettings } from "./zone-settings.js";

type ZoneRequest = FastifyRequest<{ Params: { zone_id: string } }>;
type SettingParams = { Params: { zone_id: string; setting: string } };

/**
 * The guard's account for the settings routes: the zone's. A zone of an account where the caller holds neither zone
 * settings nor DNS read is answered like a missing one (404), so zone ids cannot be probed.
 */
function zoneAccount(zones: EdgeZones): AccountResolver {
  return (req) => {
    const accountId = zones.accountOf((req as ZoneRequest).params.zone_id);
    if (!accountId || !(req.principal.can(accountId, "zone_settings_read") || req.principal.can(accountId, "dns_read"))) throw EdgeErrors.zoneNotFound();
    return accountId;
  };
}

function accountOf(zones: EdgeZones, req: ZoneRequest): string {
  const accountId = zones.accountOf(req.params.zone_id);
  if (!accountId) throw EdgeErrors.zoneNotFound();
  return accountId;
}

/** `{"value": …}` of a single setting's PATCH. */
function valueOf(body: unknown): unknown {
  if (typeof body !== "object" || body === null || Array.isArray(body) || !Object.hasOwn(body, "value"))
    throw EdgeErrors.invalidBody('The body must be a JSON object with the setting\'s "value"');
  return (body as { value: unknown }).value;
}

/** `{"items": [{"id", "value"}, …]}` of the PATCH of several settings. */
function itemsOf(body: unknown): { id: string; value: unknown }[] {
  const items = typeof body === "object" && body !== null ? (body as { items?: unknown }).items : undefined;
  if (!Array.isArray(items) || items.length === 0) throw EdgeErrors.invalidBody('The body must be a JSON object with a non-empty "items" array');
  if (items.length > 100) throw EdgeErrors.invalidBody("At most 100 settings can be changed at once");
  const seen = new Set<string>();
  return items.map((item: unknown, i) => {
    if (typeof item !== "object" || item === null || typeof (item as { id?: unknown }).id !== "string" || !Object.hasOwn(item, "value"))
      throw EdgeErrors.invalidBody(`items[${i}] must be an object with an "id" and a "value"`);
    const { id, value } = item as { id: string; value: unknown };
    if (seen.has(id)) throw EdgeErrors.invalidBody(`items[${i}]: the setting ${id.slice(0, 100)} is named twice`);
    seen.add(id);
    return { id, value };
  });
}

/** The hosted zone settings API: /zones/{id}/settings and /zones/{id}/settings/{setting}. */
export function registerSettingsRoutes(app: FastifyInstance, zones: EdgeZones, settings: ZoneSettings): void {
  const read = { permission: "zone_settings_read", account: zoneAccount(zones) } as const;
  const edit = { permission: "zone_settings_edit", account: zoneAccount(zones) } as const;

  app.get<{ Params: { zone_id: string } }>("/zones/:zone_id/settings", { config: read }, async (req) => {
    accountOf(zones, req);
    return ok(settings.list(req.params.zone_id));
  });

  app.patch<{ Params: { zone_id: string } }>("/zones/:zone_id/settings", { config: edit }, async (req) => {
    const accountId = accountOf(zones, req);
    return ok(await settings.edit(req.params.zone_id, accountId, itemsOf(req.body)));
  });

  app.get<SettingParams>("/zones/:zone_id/settings/:setting", { config: read }, async (req) => {
    accountOf(zones, req);
    return ok(settings.get(req.params.zone_id, req.params.setting));
  });

  app.patch<SettingParams>("/zones/:zone_id/settings/:setting", { config: edit }, async (req) => {
    const accountId = accountOf(zones, req);
    settings.get(req.params.zone_id, req.params.setting);
    const [changed] = await settings.edit(req.params.zone_id, accountId, [{ id: req.params.setting, value: valueOf(req.body) }]);
    return ok(changed);
  });
}
