import { randomUUID } from "node:crypto";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { ok } from "../../core/http/envelope.js";
import type { AccountResolver } from "../../core/http/guard.js";
import { readPage, resultInfo } from "../../core/http/pagination.js";
import type { SecretBox } from "../../core/secret-box.js";
import type { PlatformHostnames } from "../../core/service.js";
import { EdgeErrors } from "../errors.js";
import { BUNDLE_METHODS, checkCertificate } from "./custom.js";
import { customKeyContext, type CertificateManager } from "./manager.js";
import type { CertificatePacks } from "./packs.js";
import type { CertificateStore, CustomCertificateRow } from "./store.js";

/** Custom certificates one zone may have (hosted plans allow a handful; each is kept in memory on every node). */
export const MAX_CUSTOM_PER_ZONE = 20;

/** A zone as the certificate routes need it. */
export interface CertificateZone {
  id: string;
  name: string;
  accountId: string;
}

export interface CertificateRoutesDeps {
  zone(zoneId: string): CertificateZone | undefined;
  store: CertificateStore;
  manager: CertificateManager;
  box: SecretBox;
  packs: CertificatePacks;
  /** The platform's own names: a certificate may not name one (a zone made before the operator named it may enclose it). */
  platformHostnames: Pick<PlatformHostnames, "refuse">;
}

type ZoneParams = { Params: { zone_id: string } };
type CertParams = { Params: { zone_id: string; certificate_id: string } };

/**
 * The guard's account: the zone's. A zone of an account where the caller holds neither SSL and Certificates nor DNS
 * read is answered like a missing one (404), so zone ids cannot be probed.
 */
function zoneAccount(deps: CertificateRoutesDeps): AccountResolver {
  return (req) => {
    const accountId = deps.zone((req as FastifyRequest<ZoneParams>).params.zone_id)?.accountId;
    if (!accountId || !(req.principal.can(accountId, "ssl_and_certificates_read") || req.principal.can(accountId, "dns_read"))) throw EdgeErrors.zoneNotFound();
    return accountId;
  };
}

/** The hosted answer of a custom certificate: never its key, nor (as hosted) its PEM. */
function view(row: CustomCertificateRow, now = Date.now()) {
  return {
    id: row.id,
    zone_id: row.zoneId,
    hosts: row.hosts,
    issuer: row.issuer,
    signature: row.signature,
    status: row.expiresOn > now ? "active" : "expired",
    bundle_method: row.bundleMethod,
    type: "sni_custom",
    uploaded_on: new Date(row.uploadedOn).toISOString(),
    modified_on: new Date(row.modifiedOn).toISOString(),
    expires_on: new Date(row.expiresOn).toISOString(),
    priority: 0,
  };
}

function objectBody(body: unknown): Record<string, unknown> {
  if (typeof body !== "object" || body === null || Array.isArray(body)) throw EdgeErrors.invalidBody("The body must be a JSON object");
  return body as Record<string, unknown>;
}

function bundleMethod(value: unknown, fallback: string): string {
  if (value === undefined) return fallback;
  if (typeof value !== "string" || !(BUNDLE_METHODS as readonly string[]).includes(value))
    throw EdgeErrors.invalidBody(`"bundle_method" takes one of ${BUNDLE_METHODS.join(", ")}`);
  return value;
}

/** What the platform cannot do is refused, never accepted and ignored. */
function refuseUnsupported(body: Record<string, unknown>): void {
  if (body.type !== undefined && body.type !== "sni_custom")
    throw EdgeErrors.invalidBody(
      'Only "type": "sni_custom" is supported: the edge serves certificates by SNI (legacy_custom, for clients without SNI, is not)',
    );
  for (const field of ["geo_restrictions", "policy", "policy_restrictions", "custom_csr_id", "deploy"])
    if (body[field] !== undefined && body[field] !== null) throw EdgeErrors.invalidBody(`"${field}" is not supported here (docs/proxy.md)`);
}

/** Refuses (400) a certificate naming a platform hostname or a name under one (`*.api.x` as much as `api.x`). */
function refusePlatformNames(deps: CertificateRoutesDeps, hosts: readonly string[]): void {
  for (const host of hosts) deps.platformHostnames.refuse("custom certificate", host.startsWith("*.") ? host.slice(2) : host);
}

/** The hosted paths /zones/{id}/custom_certificates and /zones/{id}/ssl/certificate_packs. */
export function registerCertificateRoutes(app: FastifyInstance, deps: CertificateRoutesDeps): void {
  const read = { permission: "ssl_and_certificates_read", account: zoneAccount(deps) } as const;
  const edit = { permission: "ssl_and_certificates_edit", account: zoneAccount(deps) } as const;
  const zoneOf = (zoneId: string) => {
    const zone = deps.zone(zoneId);
    if (!zone) throw EdgeErrors.zoneNotFound();
    return zone;
  };
  const find = async (zoneId: string, id: string) => {
    const row = (await deps.store.customCertificates()).find((c) => c.zoneId === zoneId && c.id === id);
    if (!row) throw EdgeErrors.certificateNotFound();
    return row;
  };

  app.get<ZoneParams>("/zones/:zone_id/custom_certificates", { config: read }, async (req) => {
    const zone = zoneOf(req.params.zone_id);
    const page = readPage(req.query as Record<string, unknown>, { defaultPerPage: 20, maxPerPage: 50, minPerPage: 5 });
    const all = (await deps.store.customCertificates()).filter((c) => c.zoneId === zone.id);
    const result = all.slice(page.offset, page.offset + page.perPage).map((c) => view(c));
    return ok(result, resultInfo(page, result.length, all.length));
  });

  app.get<CertParams>("/zones/:zone_id/custom_certificates/:certificate_id", { config: read }, async (req) => {
    const zone = zoneOf(req.params.zone_id);
    return ok(view(await find(zone.id, req.params.certificate_id)));
  });

  app.post<ZoneParams>("/zones/:zone_id/custom_certificates", { config: edit }, async (req) => {
    const zone = zoneOf(req.params.zone_id);
    const body = objectBody(req.body);
    refuseUnsupported(body);
    const checked = checkCertificate(body.certificate, body.private_key, zone.name);
    refusePlatformNames(deps, checked.hosts);
    const id = randomUUID().replaceAll("-", "");
    const t = Date.now();
    const row: CustomCertificateRow = {
      id,
      zoneId: zone.id,
      accountId: zone.accountId,
      hosts: checked.hosts,
      certPem: checked.certPem,
      keySealed: deps.box.seal(checked.keyPem, customKeyContext(id)),
      issuer: checked.issuer,
      signature: checked.signature,
      bundleMethod: bundleMethod(body.bundle_method, "ubiquitous"),
      expiresOn: checked.expiresOn,
      uploadedOn: t,
      modifiedOn: t,
    };
    if (!(await deps.store.addCustomCertificate(row, MAX_CUSTOM_PER_ZONE))) throw EdgeErrors.tooManyCertificates(MAX_CUSTOM_PER_ZONE);
    // Served by this node before the answer leaves; the others read it from the store's notice.
    await deps.manager.refresh();
    return ok(view(row));
  });

  app.patch<CertParams>("/zones/:zone_id/custom_certificates/:certificate_id", { config: edit }, async (req) => {
    const zone = zoneOf(req.params.zone_id);
    const body = objectBody(req.body);
    refuseUnsupported(body);
    const stored = await find(zone.id, req.params.certificate_id);
    if (body.certificate === undefined && body.private_key === undefined && body.bundle_method === undefined)
      throw EdgeErrors.invalidBody('Nothing to change: give "certificate", "private_key" or "bundle_method"');
    // A new certificate alone keeps the stored key (it must match it), a new key alone the stored certificate.
    const checked = checkCertificate(
      body.certificate ?? stored.certPem,
      body.private_key ?? deps.box.open(stored.keySealed, customKeyContext(stored.id)),
      zone.name,
    );
    if (body.certificate !== undefined) refusePlatformNames(deps, checked.hosts);
    const row: CustomCertificateRow = {
      ...stored,
      hosts: checked.hosts,
      certPem: checked.certPem,
      keySealed: deps.box.seal(checked.keyPem, customKeyContext(stored.id)),
      issuer: checked.issuer,
      signature: checked.signature,
      bundleMethod: bundleMethod(body.bundle_method, stored.bundleMethod),
      expiresOn: checked.expiresOn,
      modifiedOn: Math.max(Date.now(), stored.modifiedOn + 1),
    };
    if (!(await deps.store.replaceCustomCertificate(row))) throw EdgeErrors.certificateNotFound();
    await deps.manager.refresh();
    return ok(view(row));
  });

  app.delete<CertParams>("/zones/:zone_id/custom_certificates/:certificate_id", { config: edit }, async (req) => {
    const zone = zoneOf(req.params.zone_id);
    if (!(await deps.store.deleteCustomCertificate(zone.id, req.params.certificate_id))) throw EdgeErrors.certificateNotFound();
    await deps.manager.refresh();
    return ok({ id: req.params.certificate_id });
  });

  app.get<ZoneParams>("/zones/:zone_id/ssl/certificate_packs", { config: read }, async (req) => {
    const zone = zoneOf(req.params.zone_id);
    const page = readPage(req.query as Record<string, unknown>, { defaultPerPage: 20, maxPerPage: 50, minPerPage: 5 });
    const all = deps.packs.ofZone(zone);
    const result = all.slice(page.offset, page.offset + page.perPage);
    return ok(result, resultInfo(page, result.length, all.length));
  });

  app.get<{ Params: { zone_id: string; pack_id: string } }>("/zones/:zone_id/ssl/certificate_packs/:pack_id", { config: read }, async (req) => {
    const zone = zoneOf(req.params.zone_id);
    const pack = deps.packs.ofZone(zone).find((p) => p.id === req.params.pack_id);
    if (!pack) throw EdgeErrors.certificateNotFound();
    return ok(pack);
  });
}
