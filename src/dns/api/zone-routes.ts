import type { FastifyInstance, FastifyRequest } from "fastify";
import { z } from "zod";
import { ok } from "../../core/http/envelope.js";
import { readPage, pageOf } from "../../core/http/pagination.js";
import { parseWith } from "../../core/http/validate.js";
import type { DnsConfig } from "../config.js";
import { DnsErrors } from "../errors.js";
import type { Zone } from "../model.js";
import { exactZoneName, filterZones } from "../zones/list.js";
import { checkRegistrable, parseZoneName } from "../zones/names.js";
import type { ZoneService } from "../zones/zone-service.js";
import { zoneAccount, zoneOf } from "./zone-access.js";
import { ZONE_PLAN, zoneView } from "./views.js";

const createBody = z
  .object({
    name: z.string(),
    account: z.object({ id: z.string() }).passthrough().optional(),
    type: z.enum(["full", "secondary"]).optional(),
    // Terraform's provider sends these when its config sets them (its model's computed_optional fields) and compares
    // the answer with its plan: paused is honoured, custom name servers are refused (checkZonePatch's reason).
    paused: z.boolean().optional(),
    vanity_name_servers: z.array(z.string()).optional(),
    // The hosted API scans the zone's current DNS for records to copy; nothing here does, so asking for it is refused.
    jump_start: z
      .boolean()
      .optional()
      .refine((v): boolean => v !== true, {
        message: "scanning for existing records is not supported here; import a zone file (POST /zones/{zone_id}/dns_records/import); only false is accepted",
      }),
  })
  .passthrough();

/** The fields of the hosted API's zone PATCH; each is checked against what this platform can do below. */
const patchBody = z
  .object({
    paused: z.boolean().optional(),
    type: z.enum(["full", "partial", "secondary", "internal"]).optional(),
    vanity_name_servers: z.array(z.string()).optional(),
    plan: z.object({ id: z.string() }).passthrough().optional(),
  })
  .strict();

type ZoneParams = { Params: { zone_id: string } };

const vanityNameServersRefused = (cfg: DnsConfig) =>
  DnsErrors.zoneFieldUnsupported(
    "vanity_name_servers",
    `custom name servers per zone are not supported; every zone is served by the platform's name servers (${cfg.nameServers.join(", ")}, set with --name-servers)`,
  );

/**
 * Refuses what a zone PATCH asks and this platform cannot do. A value the zone already has is accepted (clients
 * send the whole object back); anything else is a 400 naming the field, never a silent success.
 */
function checkZonePatch(body: z.output<typeof patchBody>, zone: Zone, cfg: DnsConfig): void {
  const type = zone.type ?? "full";
  if (body.type !== undefined && body.type !== type)
    throw DnsErrors.zoneFieldUnsupported(
      "type",
      body.type === "full" || body.type === "secondary"
        ? `a zone's type is chosen when it is created (this one is ${type}); create the zone again to change it`
        : `zones here are full or secondary; ${body.type} zones are not supported`,
    );
  if (body.vanity_name_servers !== undefined && body.vanity_name_servers.length > 0) throw vanityNameServersRefused(cfg);
  if (body.plan !== undefined && body.plan.id !== ZONE_PLAN.id)
    throw DnsErrors.zoneFieldUnsupported("plan", `zones have one plan here (${ZONE_PLAN.id}, "${ZONE_PLAN.name}"); there is no other to change to`);
}

/**
 * `secondaryRefused`: why secondary zones cannot be created on this platform (several nodes: transfer state is per
 * node), or undefined when they can.
 */
export function registerZoneRoutes(app: FastifyInstance, zones: ZoneService, cfg: DnsConfig, secondaryRefused?: () => Error): void {
  // Zones are shown only to callers who can read their account, and the caller's principal knows those accounts' names.
  const accountName = (req: FastifyRequest, id: string) => req.principal.account(id)?.name ?? "";
  const view = (req: FastifyRequest, z: Zone) =>
    zoneView(z, { accountName: accountName(req, z.account_id), permissions: req.principal.permissionsOn(z.account_id) }, cfg.nameServers);
  const read = { permission: "dns_read", account: zoneAccount(zones) } as const;
  const edit = { permission: "dns_edit", account: zoneAccount(zones) } as const;

  /** The account a new zone goes to: the one named, or the caller's only account where it may edit DNS. */
  const newZoneAccount = (req: FastifyRequest): string => {
    const body = parseWith(createBody, req.body ?? {});
    if (body.account?.id) return body.account.id;
    const mine = req.principal.accounts().filter((a) => req.principal.can(a, "dns_edit"));
    if (mine.length !== 1) throw DnsErrors.accountRequired();
    return mine[0];
  };

  app.post("/zones", { config: { permission: "dns_edit", account: newZoneAccount } }, async (req) => {
    const body = parseWith(createBody, req.body ?? {});
    const accountId = newZoneAccount(req);
    const name = parseZoneName(body.name);
    if (!name) throw DnsErrors.zoneNameInvalid(body.name);
    checkRegistrable(name, cfg.allowedZones);
    if (body.type === "secondary" && secondaryRefused) throw secondaryRefused();
    if (body.vanity_name_servers?.length) throw vanityNameServersRefused(cfg);
    const zs = await zones.createZone(accountId, name, body.type, { paused: body.paused });
    return ok(view(req, zs.zone));
  });

  // Lists only the zones the caller may read (filtered below).
  app.get("/zones", { config: { permission: "self" } }, async (req) => {
    const q = req.query as Record<string, unknown>;
    const page = readPage(q, { defaultPerPage: 20, maxPerPage: 1000 });
    // Zones made through other nodes before this request are listed too. wrangler finds a route's zone this way
    // (name=, a label dropped each time): one whose notice never came is read from the store.
    await zones.upToDate();
    const exact = exactZoneName(q);
    if (exact !== undefined) await zones.catchUpNamed([exact]);
    const visible = [...zones.all()].map((zs) => zs.zone).filter((z) => req.principal.can(z.account_id, "dns_read"));
    const { result, result_info } = pageOf(
      filterZones(visible, q, (id) => accountName(req, id)).map((z) => view(req, z)),
      page,
    );
    return ok(result, result_info);
  });

  app.get<ZoneParams>("/zones/:zone_id", { config: read }, async (req) => ok(view(req, zoneOf(zones, req).zone)));

  app.patch<ZoneParams>("/zones/:zone_id", { config: edit }, async (req) => {
    const zs = zoneOf(zones, req);
    const body = parseWith(patchBody, req.body ?? {});
    checkZonePatch(body, zs.zone, cfg);
    const paused = body.paused;
    if (paused !== undefined) await zones.updateZone(zs, () => ({ paused }));
    return ok(view(req, zs.zone));
  });

  app.delete<ZoneParams>("/zones/:zone_id", { config: edit }, async (req) => {
    const zs = zoneOf(zones, req);
    await zones.deleteZone(zs);
    return ok({ id: zs.zone.id });
  });
}
