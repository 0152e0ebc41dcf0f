import { randomUUID } from "node:crypto";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { z } from "zod";
import type { AccountResolver } from "../../core/http/guard.js";
import { ok } from "../../core/http/envelope.js";
import { parseWith } from "../../core/http/validate.js";
import type { Logger } from "../../core/logger.js";
import { WorkersErrors } from "../errors.js";
import { RoutesCodes, RoutesErrors } from "./errors.js";
import { inZone, MAX_CUSTOM_DOMAIN_CHARS, parsePattern, validHostname } from "./pattern.js";
import type { ApiMessage, DomainRecords } from "./dns-records.js";
import type { CustomDomain, RoutesStore, WorkerRoute } from "./store.js";
import type { PlatformHostnames } from "../../core/service.js";
import type { ZonesPort } from "../../dns/service.js";

/** What the routes API needs of the DNS area: zones by id, by name, the zone a name is in, and DNS's not-found. */
export type ZoneFinder = Pick<ZonesPort, "byId" | "byName" | "enclosing" | "zoneNotFound" | "upToDate" | "catchUp">;
type Zone = NonNullable<ReturnType<ZoneFinder["byId"]>>;

/** What a Custom Domain's API answer shows of its certificate (the edge's certificates hand it over). */
export interface CertificateState {
  status: "pending" | "active" | "failed";
  expires_on?: string;
  last_error?: string;
  next_attempt_on?: string;
}

export interface RoutesApiDeps {
  store: RoutesStore;
  zones: ZoneFinder;
  scriptExists(accountId: string, script: string): Promise<boolean>;
  /** The DNS records of Custom Domains (dns-records.ts). */
  records: DomainRecords;
  /** Called after every change, once it is committed, so the edge serves it before the answer leaves. */
  changed(): Promise<void>;
  log: Logger;
  /** The certificate state of a domain's hostname (ours), when the platform issues certificates (--edge-tls-port). */
  certificateOf?: (hostname: string, accountId: string) => CertificateState;
  /** The platform's own hostnames (the edge's plan): no route or Custom Domain may sit at or under one. */
  platformHostnames: PlatformHostnames;
  /**
   * When the platform issues certificates: how many of an account's domains have none issued yet, and how many it may
   * have (--acme-pending-per-account). Attaching new domains past it is refused, so that one account cannot fill the
   * order queue and spend the platform's ACME rate limits.
   */
  pendingCertificates?: { notIssued(accountId: string, hostnames: Iterable<string>): number; max: number };
}

/** Routes or domains one request may set (wrangler sends a Worker's whole list in one PUT). */
export const MAX_PER_REQUEST = 1000;

const id = () => randomUUID().replaceAll("-", "");
// A route's update without a Worker sends `"script": null` (Terraform's provider, for a script removed from its config).
const routeBody = z.object({ pattern: z.string().min(1), script: z.string().min(1).nullish() });
const scriptRoutesBody = z
  .array(
    z.union([
      z
        .string()
        .min(1)
        .transform((pattern): { pattern: string; zone_id?: string; zone_name?: string } => ({ pattern })),
      z.object({ pattern: z.string().min(1), zone_id: z.string().optional(), zone_name: z.string().optional() }),
    ]),
  )
  .max(MAX_PER_REQUEST);
const domainBody = z.object({
  hostname: z.string().min(1),
  service: z.string().min(1),
  environment: z.string().default("production"),
  zone_id: z.string().optional(),
  zone_name: z.string().optional(),
  override_existing_dns_record: z.boolean().default(false),
});
const domainRecordsBody = z.object({
  override_scope: z.boolean().default(false),
  override_existing_origin: z.boolean().default(false),
  override_existing_dns_record: z.boolean().default(false),
  origins: z.array(z.object({ hostname: z.string().min(1), zone_id: z.string().optional(), zone_name: z.string().optional() })).max(MAX_PER_REQUEST),
});

const routeView = (r: WorkerRoute) => ({ id: r.id, pattern: r.pattern, ...(r.script !== null && { script: r.script }) });
const domainView = (d: CustomDomain) => ({
  id: d.id,
  zone_id: d.zoneId,
  zone_name: d.zoneName,
  hostname: d.hostname,
  service: d.service,
  environment: d.environment,
});

type ZoneParams = { zone_id: string; route_id: string };
type AccountParams = { account_id: string; name: string; domain_id: string };

/**
 * `/zones/{zone}/workers/routes` (a zone's routes), `/accounts/{a}/workers/scripts/{name}/routes` (a Worker's, as
 * `wrangler deploy` sets them), and Custom Domains (`/accounts/{a}/workers/domains`, and the
 * `…/scripts/{name}/domains/records` wrangler uses). A zone or hostname of an account the caller cannot see is
 * answered like a missing one; a route's Worker must be in the zone's account.
 */
export function registerRoutesApi(app: FastifyInstance, deps: RoutesApiDeps): void {
  const { store, zones, records } = deps;
  // Without --edge-tls-port the answer is the hosted one, unchanged; with it, `certificate` (ours) says where it stands.
  const viewOf = (d: CustomDomain) => (deps.certificateOf ? { ...domainView(d), certificate: deps.certificateOf(d.hostname, d.accountId) } : domainView(d));

  // The zone's account is the route's: a zone the caller cannot read Workers of is a 404, as on the DNS routes.
  const zoneAccount: AccountResolver = (req) => {
    const zone = zones.byId((req.params as ZoneParams).zone_id);
    if (!zone || !req.principal.can(zone.accountId, "workers_read")) throw zones.zoneNotFound();
    return zone.accountId;
  };
  const zoneRead = { permission: "workers_read", account: zoneAccount } as const;
  const zoneEdit = { permission: "workers_edit", account: zoneAccount } as const;
  const read = { config: { permission: "workers_read" } } as const;
  const edit = { config: { permission: "workers_edit" } } as const;

  const zoneOf = (req: FastifyRequest): Zone => {
    const zone = zones.byId((req.params as ZoneParams).zone_id);
    if (!zone) throw zones.zoneNotFound();
    return zone;
  };

  /** A route of `zone` from a body: its pattern parses, its host is in the zone, its script is the zone account's. */
  const checkedRoute = async (zone: Zone, routeId: string, body: unknown): Promise<WorkerRoute> => {
    const b = parseWith(routeBody, body ?? {}, RoutesCodes.validation);
    const pattern = b.pattern.trim();
    const parsed = parsePattern(pattern);
    if (typeof parsed === "string") throw RoutesErrors.invalidPattern(pattern, parsed);
    deps.platformHostnames.refuse("route", parsed.host);
    if (!inZone(parsed.host, zone.name)) throw RoutesErrors.patternNotInZone(pattern, zone.name);
    if (b.script != null && !(await deps.scriptExists(zone.accountId, b.script))) throw RoutesErrors.scriptNotFound(b.script);
    return { id: routeId, zoneId: zone.id, accountId: zone.accountId, pattern, script: b.script ?? null };
  };

  const zoneRoutes = "/zones/:zone_id/workers/routes";
  app.get(zoneRoutes, { config: zoneRead }, async (req) => ok((await store.zoneRoutes(zoneOf(req).id)).map(routeView)));
  app.post(zoneRoutes, { config: zoneEdit }, async (req) => {
    const route = await checkedRoute(zoneOf(req), id(), req.body);
    await store.addRoute(route);
    await deps.changed();
    return ok(routeView(route));
  });
  const routeOf = async (req: FastifyRequest) => {
    const zone = zoneOf(req);
    const route = (await store.zoneRoutes(zone.id)).find((r) => r.id === (req.params as ZoneParams).route_id);
    if (!route) throw RoutesErrors.routeNotFound();
    return route;
  };
  app.get(`${zoneRoutes}/:route_id`, { config: zoneRead }, async (req) => ok(routeView(await routeOf(req))));
  app.put(`${zoneRoutes}/:route_id`, { config: zoneEdit }, async (req) => {
    const route = await checkedRoute(zoneOf(req), (req.params as ZoneParams).route_id, req.body);
    if (!(await store.updateRoute(route))) throw RoutesErrors.routeNotFound();
    await deps.changed();
    return ok(routeView(route));
  });
  app.delete(`${zoneRoutes}/:route_id`, { config: zoneEdit }, async (req) => {
    const { zone_id, route_id } = req.params as ZoneParams;
    if (!(await store.deleteRoute(zone_id, route_id))) throw RoutesErrors.routeNotFound();
    await deps.changed();
    return ok({ id: route_id });
  });

  /** The account's zone a route or domain names (`zone_id`, `zone_name`), else the one its host is in. */
  const accountZone = (accountId: string, host: string, given: { zone_id?: string; zone_name?: string }): Zone => {
    const named = given.zone_id ?? given.zone_name;
    const zone =
      given.zone_id !== undefined
        ? zones.byId(given.zone_id)
        : given.zone_name !== undefined
          ? zones.byName(given.zone_name.toLowerCase())
          : zones.enclosing(host);
    if (!zone || zone.accountId !== accountId) throw RoutesErrors.zoneNotFound(named ?? host);
    return zone;
  };
  /**
   * Before accountZone: the zone it will look for, read from the store when another node made it a moment ago.
   * False when there is none (the check after refuses the request, so a list of them stops at the first).
   */
  const catchUpZone = (host: string, given: { zone_id?: string; zone_name?: string }) =>
    zones.catchUp({ zoneId: given.zone_id, zoneName: given.zone_name?.toLowerCase(), hostname: host.trim().toLowerCase().replace(/\.$/, "") });
  const scriptOf = async (req: FastifyRequest) => {
    const p = req.params as AccountParams;
    if (!(await deps.scriptExists(p.account_id, p.name))) throw WorkersErrors.scriptNotFound();
    return p;
  };

  const scriptRoutes = "/accounts/:account_id/workers/scripts/:name/routes";
  app.get(scriptRoutes, read, async (req) => {
    const p = await scriptOf(req);
    return ok((await store.scriptRoutes(p.account_id, p.name)).map(routeView));
  });
  // wrangler deploy's `routes`: the Worker's routes become these (the others it had are removed), all or none.
  app.put(scriptRoutes, edit, async (req) => {
    const p = await scriptOf(req);
    const body = parseWith(scriptRoutesBody, req.body ?? [], RoutesCodes.validation);
    await zones.upToDate();
    for (const r of body) {
      const parsed = parsePattern(r.pattern.trim());
      if (typeof parsed !== "string" && !(await catchUpZone(parsed.host, r))) break;
    }
    const routes = body.map((r): WorkerRoute => {
      const pattern = r.pattern.trim();
      const parsed = parsePattern(pattern);
      if (typeof parsed === "string") throw RoutesErrors.invalidPattern(pattern, parsed);
      deps.platformHostnames.refuse("route", parsed.host);
      const zone = accountZone(p.account_id, parsed.host, r);
      if (!inZone(parsed.host, zone.name)) throw RoutesErrors.patternNotInZone(pattern, zone.name);
      return { id: id(), zoneId: zone.id, accountId: p.account_id, pattern, script: p.name };
    });
    await store.replaceScriptRoutes(p.account_id, p.name, routes);
    await deps.changed();
    return ok(routes.map((r) => ({ ...routeView(r), zone_id: r.zoneId, zone_name: zones.byId(r.zoneId)?.name })));
  });

  /** A Custom Domain for `service` from a hostname and an optional zone, all checked against the account. */
  const checkedDomain = (accountId: string, service: string, environment: string, origin: { hostname: string; zone_id?: string; zone_name?: string }) => {
    const hostname = origin.hostname.trim().toLowerCase().replace(/\.$/, "");
    if (!validHostname(hostname)) throw RoutesErrors.invalidHostname(origin.hostname);
    deps.platformHostnames.refuse("Custom Domain", hostname);
    if (hostname.length > MAX_CUSTOM_DOMAIN_CHARS) throw RoutesErrors.hostnameTooLongForCertificate(hostname, MAX_CUSTOM_DOMAIN_CHARS);
    if (environment !== "production") throw RoutesErrors.environment(environment);
    const zone = accountZone(accountId, hostname, origin);
    if (!inZone(hostname, zone.name)) throw RoutesErrors.zoneMismatch(hostname, zone.name);
    // The domain's record must be in the zone the DNS server answers the hostname from: a child zone of the account
    // that encloses it wins over the parent named (dns-records.ts zoneOf).
    const closest = zones.enclosing(hostname);
    if (closest && closest.id !== zone.id)
      throw closest.accountId === accountId ? RoutesErrors.zoneNotClosest(hostname, zone.name, closest.name) : RoutesErrors.zoneNotFound(hostname);
    return { id: id(), accountId, zoneId: zone.id, zoneName: zone.name, hostname, service, environment };
  };

  /**
   * The Custom Domain at `hostname` when it is `accountId`'s. A checked hostname is answered by a zone of the caller
   * (checkedDomain), and zones never nest across accounts, so another account's domain there was left by a zone that
   * account deleted (removing its domains failed, or raced with this zone's creation): it serves nothing and is no
   * conflict; `remove` takes it away (it would block the hostname forever). Either way it is never named to the
   * caller: its Worker is another account's.
   */
  const ownDomainAt = async (accountId: string, hostname: string, remove: boolean): Promise<CustomDomain | undefined> => {
    const old = await store.domainByHostname(hostname);
    if (!old || old.accountId === accountId) return old;
    if (remove && (await store.deleteDomain(old.accountId, old.id)))
      deps.log.warn({ hostname, account: old.accountId, zone: old.zoneId }, "removed a stale Custom Domain of another account: its zone is gone");
    return undefined;
  };

  /** Refuses adding `hostnames` when the account's certificates not yet issued would then pass the cap. */
  const checkPendingCertificates = async (accountId: string, hostnames: readonly string[]) => {
    const pending = deps.pendingCertificates;
    if (!pending) return;
    const attached = new Set((await store.domains(accountId)).map((d) => d.hostname));
    const adding = new Set(hostnames.filter((h) => !attached.has(h))).size;
    if (adding === 0) return;
    const waiting = pending.notIssued(accountId, attached);
    if (waiting + adding > pending.max) throw RoutesErrors.tooManyPendingCertificates(pending.max, waiting);
  };

  /**
   * Attaches a checked domain: its DNS record first, then the domain (dns-records.ts says why in this order); a
   * domain that is then refused takes the record just made with it. A hostname already attached keeps its id.
   */
  const attach = async (domain: CustomDomain, override: { origin: boolean; dnsRecord: boolean }, messages: ApiMessage[]) => {
    const old = await ownDomainAt(domain.accountId, domain.hostname, true);
    const wanted = old ? { ...domain, id: old.id } : domain;
    // Attached in a zone that no longer answers it (a child zone created since, not yet moved to): its record goes.
    if (old) await records.leaveStoredZone(old);
    const made = await records.attach(wanted, override.dnsRecord);
    messages.push(...made.messages);
    try {
      return await store.putDomain(wanted, override.origin);
    } catch (err) {
      if (made.created) await records.detachAll([wanted]);
      throw err;
    }
  };

  const domains = "/accounts/:account_id/workers/domains";
  const listDomains = async (req: FastifyRequest) => {
    const p = req.params as AccountParams;
    const q = req.query as Record<string, unknown>;
    const filters: [keyof ReturnType<typeof domainView>, unknown][] = [
      ["hostname", q.hostname],
      ["service", q.service],
      ["zone_id", q.zone_id],
      ["zone_name", q.zone_name],
      ["environment", q.environment],
    ];
    const views = (await store.domains(p.account_id)).map(viewOf);
    return ok(views.filter((v) => filters.every(([field, want]) => typeof want !== "string" || v[field] === want)));
  };
  const domainOf = async (req: FastifyRequest) => {
    const p = req.params as AccountParams;
    const d = (await store.domains(p.account_id)).find((x) => x.id === p.domain_id);
    if (!d) throw RoutesErrors.domainNotFound();
    return d;
  };
  // `…/domains/records` is the path wrangler reads and writes; `…/domains` the one the API reference documents.
  for (const base of [domains, `${domains}/records`]) {
    app.get(base, read, listDomains);
    app.get(`${base}/:domain_id`, read, async (req) => ok(viewOf(await domainOf(req))));
    // The domain goes first, then its record (dns-records.ts).
    app.delete(`${base}/:domain_id`, edit, async (req) => {
      const p = req.params as AccountParams;
      const d = await domainOf(req);
      if (!(await store.deleteDomain(p.account_id, p.domain_id))) throw RoutesErrors.domainNotFound();
      await deps.changed();
      await records.detachAll([d]);
      return ok(null);
    });
  }
  // Attaching a hostname that is another Worker's Custom Domain moves it, as the hosted "attach" does.
  app.put(domains, edit, async (req) => {
    const p = req.params as AccountParams;
    const b = parseWith(domainBody, req.body ?? {}, RoutesCodes.validation);
    await zones.upToDate();
    await catchUpZone(b.hostname, b);
    const domain = checkedDomain(p.account_id, b.service, b.environment, b);
    if (!(await deps.scriptExists(p.account_id, b.service))) throw WorkersErrors.scriptNotFound();
    await checkPendingCertificates(p.account_id, [domain.hostname]);
    const messages: ApiMessage[] = [];
    const stored = await attach(domain, { origin: true, dnsRecord: b.override_existing_dns_record }, messages);
    await deps.changed();
    return ok(viewOf(stored), undefined, messages);
  });

  // wrangler deploy's `custom_domain = true` routes. With override_scope, the Worker's other Custom Domains are removed.
  app.put("/accounts/:account_id/workers/scripts/:name/domains/records", edit, async (req) => {
    const p = await scriptOf(req);
    const b = parseWith(domainRecordsBody, req.body ?? {}, RoutesCodes.validation);
    await zones.upToDate();
    for (const o of b.origins) if (!(await catchUpZone(o.hostname, o))) break;
    const wanted = b.origins.map((o) => checkedDomain(p.account_id, p.name, "production", o));
    await checkPendingCertificates(
      p.account_id,
      wanted.map((d) => d.hostname),
    );
    // Checked before anything is written, so that a conflict leaves every domain and record as it was.
    for (const d of wanted) {
      const old = await ownDomainAt(p.account_id, d.hostname, false);
      if (!b.override_existing_origin && old && old.service !== p.name) throw RoutesErrors.domainTaken(d.hostname, old.service);
      records.check(old ? { ...d, id: old.id } : d, b.override_existing_dns_record);
    }
    const stored = [];
    const messages: ApiMessage[] = [];
    for (const d of wanted) stored.push(await attach(d, { origin: b.override_existing_origin, dnsRecord: b.override_existing_dns_record }, messages));
    const detached = [];
    if (b.override_scope) {
      const keep = new Set(stored.map((d) => d.id));
      for (const d of await store.domains(p.account_id))
        if (d.service === p.name && !keep.has(d.id) && (await store.deleteDomain(p.account_id, d.id))) detached.push(d);
    }
    await deps.changed();
    await records.detachAll(detached);
    return ok(stored.map(viewOf), undefined, messages);
  });
}
