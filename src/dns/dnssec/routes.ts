import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { DnsErrors } from "../errors.js";
import { ok } from "../../core/http/envelope.js";
import { parseWith } from "../../core/http/validate.js";
import { zoneAccount, zoneOf } from "../api/zone-access.js";
import type { ZoneService } from "../zones/zone-service.js";
import type { DnssecService } from "./dnssec-service.js";
import { DnssecErrors } from "./errors.js";
import { dnssecView } from "./views.js";

type ZoneParams = { Params: { zone_id: string } };

const patchBody = z
  .object({
    status: z.enum(["active", "disabled"]).optional(),
    dnssec_multi_signer: z.boolean().optional(),
    dnssec_presigned: z.boolean().optional(),
    dnssec_use_nsec3: z.boolean().optional(),
  })
  .strict();

const rolloverBody = z.object({ key: z.enum(["zsk", "ksk"]) }).strict();

/** The hosted API's options this platform does not have are refused when turned on (false is what it does). */
function refuseUnsupported(body: z.output<typeof patchBody>): void {
  if (body.dnssec_multi_signer)
    throw DnssecErrors.unsupported("dnssec_multi_signer", "multi-signer DNSSEC is not supported; the platform signs the zone alone");
  if (body.dnssec_presigned)
    throw DnssecErrors.unsupported("dnssec_presigned", "zones are signed here as they are answered; presigned zones are not supported");
  if (body.dnssec_use_nsec3)
    throw DnssecErrors.unsupported(
      "dnssec_use_nsec3",
      "denial of existence uses NSEC compact answers (RFC 9824), which reveal no names; NSEC3 is not supported",
    );
}

/** v4 `/zones/{zone_id}/dnssec`, with the zone permissions of the other zone routes, and ours `/dnssec/rollover`. */
export function registerDnssecRoutes(app: FastifyInstance, zones: ZoneService, dnssec: DnssecService): void {
  const read = { permission: "dns_read", account: zoneAccount(zones) } as const;
  const edit = { permission: "dns_edit", account: zoneAccount(zones) } as const;
  const view = (zoneId: string) => {
    const zs = zones.get(zoneId);
    const s = dnssec.state(zoneId);
    return dnssecView(zs?.zone.name ?? "", s, zs && s ? dnssec.progress(zs, s) : undefined);
  };

  app.get<ZoneParams>("/zones/:zone_id/dnssec", { config: read }, async (req) => ok(view(zoneOf(zones, req).zone.id)));

  app.patch<ZoneParams>("/zones/:zone_id/dnssec", { config: edit }, async (req) => {
    const zs = zoneOf(zones, req);
    const body = parseWith(patchBody, req.body ?? {});
    refuseUnsupported(body);
    // A secondary zone is signed (or not) by its primary: its serial and SOA are the primary's, not ours to re-sign.
    if (body.status === "active" && zs.zone.type === "secondary") throw DnsErrors.secondaryReadOnly("DNSSEC keys and signatures");
    if (body.status === "active") await dnssec.enable(zs);
    else if (body.status === "disabled") await dnssec.disable(zs);
    return ok(view(zs.zone.id));
  });

  app.delete<ZoneParams>("/zones/:zone_id/dnssec", { config: edit }, async (req) => {
    const zs = zoneOf(zones, req);
    await dnssec.remove(zs.zone.id);
    return ok(zs.zone.id);
  });

  app.post<ZoneParams>("/zones/:zone_id/dnssec/rollover", { config: edit }, async (req) => {
    const zs = zoneOf(zones, req);
    const body = parseWith(rolloverBody, req.body ?? {});
    await dnssec.rollover(zs, body.key);
    return ok(view(zs.zone.id));
  });
}
