import { isIP } from "node:net";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { z } from "zod";
import { ok } from "../../core/http/envelope.js";
import { parseWith } from "../../core/http/validate.js";
import { zoneAccount, zoneOf } from "../api/zone-access.js";
import type { Notifier } from "../nameserver/notify.js";
import type { ZoneService } from "../zones/zone-service.js";
import type { Transfers } from "./transfers.js";
import { PEER_NOT_ALLOWED } from "./addresses.js";
import { TransferErrors } from "./errors.js";
import type { Incoming, Outgoing, Peer, TsigKeyEntry } from "./model.js";
import { algorithmName, TSIG_ALGORITHMS } from "../nameserver/tsig.js";

type AccountParams = { Params: { account_id: string } };
type ItemParams = { Params: { account_id: string; id: string } };
type ZoneParams = { Params: { zone_id: string } };

const KEY_NAME = /^(?=.{1,253}$)([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*$/;
const MIN_SECRET_BYTES = 16;
const MAX_SECRET_BYTES = 1024;

const tsigBody = z
  .object({
    name: z.string().max(254),
    algo: z.string().max(64),
    /** Absent (or null) on an update: the secret stays as it is (it is never shown again after creation). */
    secret: z.string().max(2048).nullish(),
  })
  .passthrough();

const peerBody = z
  .object({
    name: z.string().min(1).max(255),
    ip: z.string().max(64).nullish(),
    port: z.number().int().min(1).max(65535).nullish(),
    tsig_id: z.string().max(64).nullish(),
    ixfr_enable: z.boolean().nullish(),
  })
  .passthrough();

const outgoingBody = z.object({ name: z.string().max(254).optional(), peers: z.array(z.string().max(64)).max(100) }).passthrough();
/** The hosted API's bounds are not published; a day is its default, and under 30 s would hammer a primary. */
const MIN_AUTO_REFRESH = 30;
const MAX_AUTO_REFRESH = 7 * 86400;
const incomingBody = z
  .object({
    name: z.string().max(254).optional(),
    peers: z.array(z.string().max(64)).min(1).max(20),
    auto_refresh_seconds: z.number().int().min(MIN_AUTO_REFRESH).max(MAX_AUTO_REFRESH).optional(),
  })
  .passthrough();

function tsigFields(body: z.output<typeof tsigBody>, current?: TsigKeyEntry): Omit<TsigKeyEntry, "id" | "account_id"> {
  const name = body.name.toLowerCase().replace(/\.$/, "");
  if (!KEY_NAME.test(name)) throw TransferErrors.invalid(`name: "${body.name}" is not a DNS name (a TSIG key is named like tsig-key.example.com.)`, "/name");
  const algorithm = algorithmName(body.algo);
  if (!algorithm || !(TSIG_ALGORITHMS as readonly string[]).includes(algorithm))
    throw TransferErrors.invalid(`algo: use one of ${TSIG_ALGORITHMS.map((a) => a + ".").join(", ")}`, "/algo");
  let secret = current?.secret;
  if (body.secret != null) {
    const bytes = /^[A-Za-z0-9+/]+={0,2}$/.test(body.secret) && body.secret.length % 4 === 0 ? Buffer.from(body.secret, "base64") : undefined;
    if (!bytes || bytes.length < MIN_SECRET_BYTES || bytes.length > MAX_SECRET_BYTES)
      throw TransferErrors.invalid(`secret: base64 of ${MIN_SECRET_BYTES} to ${MAX_SECRET_BYTES} random bytes (e.g. openssl rand -base64 32)`, "/secret");
    secret = body.secret;
  }
  if (!secret) throw TransferErrors.invalid("secret: required", "/secret");
  return { name, algorithm, secret };
}

/**
 * A key as the API shows it. The secret goes only to callers who may edit the account's DNS (who could replace the
 * key anyway), as the hosted API answers it: Terraform's provider reads it back on every refresh and would otherwise
 * plan to replace the key each time. A token that may only read DNS sees null.
 */
const tsigView = (t: TsigKeyEntry, withSecret: boolean) => ({ id: t.id, name: `${t.name}.`, algo: `${t.algorithm}.`, secret: withSecret ? t.secret : null });
const peerView = (p: Peer) => ({ id: p.id, name: p.name, ip: p.ip, port: p.port, tsig_id: p.tsig_id, ixfr_enable: p.ixfr_enable });

export function registerTransferRoutes(app: FastifyInstance, zones: ZoneService, transfers: Transfers, notifier: Notifier): void {
  const { directory, secondary } = transfers;
  const read = { permission: "dns_read" } as const;
  const edit = { permission: "dns_edit" } as const;

  // TSIG keys
  const base = "/accounts/:account_id/secondary_dns";
  const uniqueName = (accountId: string, name: string, id?: string) => {
    if (directory.tsigsOf(accountId).some((t) => t.name === name && t.id !== id))
      throw TransferErrors.invalid(`name: the account already has a TSIG named ${name}.`, "/name");
  };
  const mayEdit = (req: FastifyRequest<AccountParams>) => req.principal.can(req.params.account_id, "dns_edit");
  app.get<AccountParams>(`${base}/tsigs`, { config: read }, async (req) => ok(directory.tsigsOf(req.params.account_id).map((t) => tsigView(t, mayEdit(req)))));
  app.post<AccountParams>(`${base}/tsigs`, { config: edit }, async (req) => {
    const fields = tsigFields(parseWith(tsigBody, req.body ?? {}));
    uniqueName(req.params.account_id, fields.name);
    return ok(tsigView(await directory.putTsig(req.params.account_id, fields), true));
  });
  app.get<ItemParams>(`${base}/tsigs/:id`, { config: read }, async (req) => ok(tsigView(directory.tsig(req.params.account_id, req.params.id), mayEdit(req))));
  app.put<ItemParams>(`${base}/tsigs/:id`, { config: edit }, async (req) => {
    const current = directory.tsig(req.params.account_id, req.params.id);
    const fields = tsigFields(parseWith(tsigBody, req.body ?? {}), current);
    uniqueName(req.params.account_id, fields.name, current.id);
    return ok(tsigView(await directory.putTsig(req.params.account_id, fields, current.id), true));
  });
  app.delete<ItemParams>(`${base}/tsigs/:id`, { config: edit }, async (req) => {
    await directory.deleteTsig(req.params.account_id, req.params.id);
    return ok({ id: req.params.id });
  });

  // Peers
  const peerFields = (body: z.output<typeof peerBody>): Omit<Peer, "id" | "account_id"> => {
    if (body.ip != null && !isIP(body.ip)) throw TransferErrors.invalid(`ip: "${body.ip}" is not an IPv4 or IPv6 address`, "/ip");
    if (body.ip != null && !transfers.peerAllowed(body.ip)) throw TransferErrors.invalid(`ip: ${body.ip}: ${PEER_NOT_ALLOWED}`, "/ip");
    return { name: body.name, ip: body.ip ?? null, port: body.port ?? 53, tsig_id: body.tsig_id || null, ixfr_enable: body.ixfr_enable ?? false };
  };
  app.get<AccountParams>(`${base}/peers`, { config: read }, async (req) => ok(directory.peersOf(req.params.account_id).map(peerView)));
  app.post<AccountParams>(`${base}/peers`, { config: edit }, async (req) =>
    ok(peerView(await directory.putPeer(req.params.account_id, peerFields(parseWith(peerBody, req.body ?? {}))))),
  );
  app.get<ItemParams>(`${base}/peers/:id`, { config: read }, async (req) => ok(peerView(directory.peer(req.params.account_id, req.params.id))));
  app.put<ItemParams>(`${base}/peers/:id`, { config: edit }, async (req) => {
    directory.peer(req.params.account_id, req.params.id);
    return ok(peerView(await directory.putPeer(req.params.account_id, peerFields(parseWith(peerBody, req.body ?? {})), req.params.id)));
  });
  app.delete<ItemParams>(`${base}/peers/:id`, { config: edit }, async (req) => {
    await directory.deletePeer(req.params.account_id, req.params.id);
    return ok({ id: req.params.id });
  });

  // Outgoing transfers of a zone
  const zoneRead = { permission: "dns_read", account: zoneAccount(zones) } as const;
  const zoneEdit = { permission: "dns_edit", account: zoneAccount(zones) } as const;
  const out = "/zones/:zone_id/secondary_dns/outgoing";
  const outgoingView = (o: Outgoing) => {
    const zs = zones.get(o.zone_id)!;
    return {
      id: o.zone_id,
      name: `${zs.zone.name}.`,
      peers: o.peers,
      enabled: o.enabled,
      created_time: o.created_time,
      checked_time: zs.zone.modified_on,
      last_transferred_time: o.last_transferred_time,
      soa_serial: zs.zone.serial,
    };
  };
  const configured = (zoneId: string) => {
    const o = directory.outgoingOf(zoneId);
    if (!o) throw TransferErrors.outgoingNotFound();
    return o;
  };
  const status = (o: Outgoing) => (o.enabled ? "Enabled" : "Disabled");
  app.get<ZoneParams>(out, { config: zoneRead }, async (req) => ok(outgoingView(configured(zoneOf(zones, req).zone.id))));
  for (const [method, create] of [
    ["post", true],
    ["put", false],
  ] as const) {
    app[method]<ZoneParams>(out, { config: zoneEdit }, async (req) => {
      const zs = zoneOf(zones, req);
      const body = parseWith(outgoingBody, req.body ?? {});
      const o = await directory.putOutgoing(zs.zone, body.peers, create);
      // New peers learn of the zone at once.
      if (o.enabled) notifier.notifyNow(zs);
      return ok(outgoingView(o));
    });
  }
  app.delete<ZoneParams>(out, { config: zoneEdit }, async (req) => {
    const zs = zoneOf(zones, req);
    if (!(await directory.deleteOutgoing(zs.zone.id))) throw TransferErrors.outgoingNotFound();
    return ok({ id: zs.zone.id });
  });
  app.post<ZoneParams>(`${out}/enable`, { config: zoneEdit }, async (req) => {
    const zs = zoneOf(zones, req);
    configured(zs.zone.id);
    const o = await directory.setOutgoingEnabled(zs.zone.id, true);
    notifier.notifyNow(zs);
    return ok(status(o));
  });
  app.post<ZoneParams>(`${out}/disable`, { config: zoneEdit }, async (req) => {
    const zs = zoneOf(zones, req);
    configured(zs.zone.id);
    return ok(status(await directory.setOutgoingEnabled(zs.zone.id, false)));
  });
  app.post<ZoneParams>(`${out}/force_notify`, { config: zoneEdit }, async (req) => {
    const zs = zoneOf(zones, req);
    if (!configured(zs.zone.id).enabled) throw TransferErrors.invalid("Outgoing transfers of this zone are disabled; enable them first");
    const sent = notifier.notifyNow(zs);
    return ok(`OK: NOTIFY sent to ${sent} peer(s)`);
  });
  app.get<ZoneParams>(`${out}/status`, { config: zoneRead }, async (req) => ok(status(configured(zoneOf(zones, req).zone.id))));

  // Incoming transfers of a secondary zone (the platform as a secondary: secondary.ts)
  const inc = "/zones/:zone_id/secondary_dns/incoming";
  const secondaryZone = (req: Parameters<typeof zoneOf>[1]) => {
    if (transfers.secondaryRefused) throw transfers.secondaryRefused();
    const zs = zoneOf(zones, req);
    if (zs.zone.type !== "secondary") throw TransferErrors.notSecondary();
    return zs;
  };
  const incomingConfigured = (zoneId: string) => {
    const i = directory.incomingOf(zoneId);
    if (!i) throw TransferErrors.incomingNotFound();
    return i;
  };
  const incomingView = (i: Incoming) => {
    const zs = zones.get(i.zone_id)!;
    return {
      id: i.zone_id,
      name: `${zs.zone.name}.`,
      peers: i.peers,
      auto_refresh_seconds: i.auto_refresh_seconds,
      created_time: i.created_time,
      modified_time: i.modified_time,
      checked_time: i.checked_time,
      soa_serial: zs.zone.serial,
      // Ours: when records last came in, when the zone is next refreshed and expires, and why the last refresh failed
      // (null when it worked).
      last_transferred_time: i.last_transferred_time,
      ...secondary.timesOf(i.zone_id),
      ...secondary.statusOf(i.zone_id),
    };
  };
  app.get<ZoneParams>(inc, { config: zoneRead }, async (req) => ok(incomingView(incomingConfigured(secondaryZone(req).zone.id))));
  for (const [method, create] of [
    ["post", true],
    ["put", false],
  ] as const) {
    app[method]<ZoneParams>(inc, { config: zoneEdit }, async (req) => {
      const zs = secondaryZone(req);
      const body = parseWith(incomingBody, req.body ?? {});
      const current = directory.incomingOf(zs.zone.id);
      const i = await directory.putIncoming(
        zs.zone,
        { peers: body.peers, auto_refresh_seconds: body.auto_refresh_seconds ?? current?.auto_refresh_seconds ?? 86400 },
        create,
      );
      secondary.configured(zs.zone.id);
      return ok(incomingView(i));
    });
  }
  app.delete<ZoneParams>(inc, { config: zoneEdit }, async (req) => {
    const zs = secondaryZone(req);
    if (!(await directory.deleteIncoming(zs.zone.id))) throw TransferErrors.incomingNotFound();
    secondary.configured(zs.zone.id);
    return ok({ id: zs.zone.id });
  });
  // Ours: waits for the transfer (bounded by the transfer limits) and says how it went.
  app.post<ZoneParams>("/zones/:zone_id/secondary_dns/force_axfr", { config: zoneEdit }, async (req) => {
    const zs = secondaryZone(req);
    incomingConfigured(zs.zone.id);
    const refused = secondary.allPrimariesRefused(zs.zone.id);
    if (refused) throw TransferErrors.primariesRefused(refused);
    // Nothing is awaited between this line and refreshNow: whoever reads it (an operator; a test holding a primary's
    // answer) knows the forced refresh has been asked for.
    req.log.info({ zone: zs.zone.name }, "force_axfr: refreshing the zone by AXFR");
    await secondary.refreshNow(zs.zone.id, true);
    const { last_error } = secondary.statusOf(zs.zone.id);
    if (last_error) throw TransferErrors.transferFailed(last_error);
    return ok("OK");
  });
}
