import type { Server } from "node:net";
import { SecretBox } from "../../core/secret-box.js";
import type { EdgeService, ServiceContext } from "../../core/service.js";
import type { ZonesPort } from "../../dns/service.js";
import type { CustomDomains } from "../ports.js";
import type { EdgeTlsConfig } from "./config.js";
import { AcmeOrderer } from "./acme.js";
import { ChallengeRecords } from "./dns-01.js";
import { CertificateManager } from "./manager.js";
import { registerCertificateMetrics } from "./metrics.js";
import { CERTIFICATES_PG_MIGRATIONS } from "./pg-migrations.js";
import { CERTIFICATES_AREA, PgCertificateStore } from "./pg-store.js";
import { CERTIFICATES_MIGRATIONS } from "./sqlite-migrations.js";
import { SqliteCertificateStore } from "./sqlite-store.js";
import { createHttp2Edge } from "./http2.js";
import { authorityOf, CertificatePacks } from "./packs.js";
import { registerCertificateRoutes } from "./routes.js";
import { listenTls, type TlsBounds } from "./tls-port.js";

/** On several nodes, the wait between writing a challenge record and asking the CA to check it (dns-01.ts). */
const DISTRIBUTED_PROPAGATION_MS = 3000;

/**
 * The HTTPS port and its certificates as a service: listed after Workers in platform.ts, so it starts (listens,
 * starts ordering) after the route table's first read; `closeUpgraded` stops accepting TLS connections (those
 * accepted are the edge port's, closed with it); `stop` stops ordering and resolves once nothing here uses a store
 * (an ACME order under way is given up).
 */
export interface EdgeTls extends EdgeService {
  manager: CertificateManager;
  /** The HTTPS edge URL for the banner, once listening. */
  url(): string | undefined;
}

/** The HTTPS edge port and the certificates of Custom Domains (--edge-tls-port): the wiring of this folder. */
export function createEdgeTls(
  ctx: ServiceContext,
  cfg: EdgeTlsConfig,
  deps: {
    zones: ZonesPort;
    /** Every zone with its records, and which records another area keeps (DNS's zones, read-only). */
    zoneRecords: ZoneRecordsView;
    domains: CustomDomains;
    /** Whether HTTP/2 is offered for a name (its zone's `http2` setting; on for names in no zone). */
    http2For: (servername: string) => boolean;
    /** The TLS versions a name's connections may use (its zone's min_tls_version and tls_1_3; defaults for none). */
    versionsFor: (servername: string | undefined) => TlsBounds;
  },
): EdgeTls {
  const log = ctx.log.child({ service: "edge", part: "certificates" });
  const pg = ctx.openPostgres(CERTIFICATES_AREA, CERTIFICATES_PG_MIGRATIONS);
  const store = pg ? new PgCertificateStore(pg, ctx.bus) : new SqliteCertificateStore(ctx.openDb("worker-certificates", CERTIFICATES_MIGRATIONS));
  // The platform's one sealing key (the one of Workers' secrets), from the environment or the state directory.
  const box = SecretBox.load(ctx.config.stateDir);
  const accountContext = `acme-account:${cfg.acme.directoryUrl}`;
  const orderer = new AcmeOrderer(cfg.acme, async (make) => {
    const kept = (await store.accountKey(cfg.acme.directoryUrl)) ?? (await store.saveAccountKey(cfg.acme.directoryUrl, box.seal(await make(), accountContext)));
    return box.open(kept, accountContext);
  });
  const challenges = new ChallengeRecords(deps.zones, log, ctx.postgres ? DISTRIBUTED_PROPAGATION_MS : 0);
  const manager = new CertificateManager({
    store,
    orderer,
    challenges: (hostname, accountId) => challenges.forOrder(hostname, accountId),
    box,
    // A domain at a platform hostname (attached before the operator named it so) is never ordered a certificate.
    attached: async () => {
      const domains = await deps.domains.all();
      // A Custom Domain's own record never makes its zone proxied: read from the store, so every node agrees at once
      // (the record's manager is known to a node only once its route table has the domain).
      const domainNames = new Set(domains.map((d) => d.hostname));
      return [...domains.filter((d) => !ctx.platformHostnames.isPlatformHostname(d.hostname)), ...proxiedZones(deps.zoneRecords, domainNames)];
    },
    // A platform hostname is in no tenant's zone here, even under a zone made before the operator named it: no
    // tenant's custom or edge certificate is ever served for the API's, the dashboard's or S3's names.
    zoneOf: (name) => (ctx.platformHostnames.isPlatformHostname(name) ? undefined : deps.zones.zoneFor(name)?.zone.id),
    served: (hostname) => (ctx.platformHostnames.isPlatformHostname(hostname) ? undefined : deps.domains.at(hostname)),
    bus: ctx.bus,
    nodeId: ctx.nodeId,
    log,
  });
  if (ctx.metrics) registerCertificateMetrics(ctx.metrics, manager);
  // A record made proxied (or the last proxied one removed) orders (or drops) the zone's edge certificate; a deleted
  // zone's custom certificates go with it (removed once, by the node it was deleted through).
  deps.zones.onChange((zs, kind, origin) => {
    if (kind === "deleted" && origin === "local")
      void store
        .deleteZoneCustomCertificates(zs.zone.id)
        .catch((err: unknown) => log.error({ err, zone: zs.zone.name }, "the custom certificates of a deleted zone were not removed"));
    manager.domainsChanged();
  });
  const packs = new CertificatePacks(manager, authorityOf(cfg.acme.directoryUrl));
  let server: Server | undefined;
  const http2 = createHttp2Edge({ serve: (req, res) => ctx.edgeRequest(req, res), log });
  const url = () => {
    const addr = server?.address();
    if (!addr || typeof addr === "string") return undefined;
    return `https://${addr.family === "IPv6" ? `[${addr.address}]` : addr.address}:${addr.port}`;
  };
  return {
    name: "certificates",
    manager,
    registerApi(app) {
      registerCertificateRoutes(app, {
        zone: (zoneId) => {
          const zs = deps.zones.get(zoneId);
          return zs && { id: zs.zone.id, name: zs.zone.name, accountId: zs.zone.account_id };
        },
        store,
        manager,
        box,
        packs,
        platformHostnames: ctx.platformHostnames,
      });
    },
    async start() {
      server = await listenTls({
        host: ctx.config.core.host,
        port: cfg.port,
        contextFor: (name) => manager.secureContext(name),
        admit: (socket) => ctx.admitEdgeConnection(socket),
        serve: (socket) => ctx.edgeConnection(socket),
        serveHttp2: (socket) => http2.serveConnection(socket),
        http2For: deps.http2For,
        versionsFor: deps.versionsFor,
        handshakeTimeoutMs: cfg.handshakeTimeoutMs,
        log,
      });
      deps.domains.onReload(() => manager.domainsChanged());
      await manager.start();
    },
    closeUpgraded: () => {
      server?.close();
      http2.close();
    },
    stop: async () => {
      server?.close();
      await manager.stop();
    },
    url,
    describe: (): Record<string, string> => {
      const https = url();
      return https ? { edge_tls: `${https} (Custom Domains, by SNI)` } : {};
    },
  };
}

/**
 * The zones with a proxied A, AAAA or CNAME record of their own (not a Custom Domain's, which has its certificate), as
 * the `*.<zone>` row of their edge certificate, with their account.
 */
export function proxiedZones(zones: ZoneRecordsView, customDomains: ReadonlySet<string>): { hostname: string; accountId: string }[] {
  const out: { hostname: string; accountId: string }[] = [];
  for (const zs of zones.all()) {
    for (const r of zs.records.values()) {
      if (r.proxied && (r.type === "A" || r.type === "AAAA" || r.type === "CNAME") && zones.managedBy(r as never) === undefined && !customDomains.has(r.name)) {
        out.push({ hostname: `*.${zs.zone.name}`, accountId: zs.zone.account_id });
        break;
      }
    }
  }
  return out;
}

/** What the certificates read of every zone's records to find the proxied zones. */
export interface ZoneRecordsView {
  all(): Iterable<{ zone: { name: string; account_id: string }; records: ReadonlyMap<string, { name: string; proxied: boolean; type: string }> }>;
  managedBy(record: never): string | undefined;
}
