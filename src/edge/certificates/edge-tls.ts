import type { Server } from "node:tls";
import { SecretBox } from "../../core/secret-box.js";
import type { EdgeService, ServiceContext } from "../../core/service.js";
import type { ZoneService } from "../../dns/zones/zone-service.js";
import type { CustomDomains } from "../ports.js";
import type { EdgeTlsConfig } from "./config.js";
import { AcmeOrderer } from "./acme.js";
import { ChallengeRecords } from "./dns-01.js";
import { CertificateManager } from "./manager.js";
import { CERTIFICATES_PG_MIGRATIONS } from "./pg-migrations.js";
import { CERTIFICATES_AREA, PgCertificateStore } from "./pg-store.js";
import { CERTIFICATES_MIGRATIONS } from "./sqlite-migrations.js";
import { SqliteCertificateStore } from "./sqlite-store.js";
import { listenTls } from "./tls-port.js";

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
export function createEdgeTls(ctx: ServiceContext, cfg: EdgeTlsConfig, deps: { zones: ZoneService; domains: CustomDomains }): EdgeTls {
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
    attached: async () => (await deps.domains.all()).filter((d) => !ctx.platformHostnames.isPlatformHostname(d.hostname)),
    served: (hostname) => (ctx.platformHostnames.isPlatformHostname(hostname) ? undefined : deps.domains.at(hostname)),
    bus: ctx.bus,
    nodeId: ctx.nodeId,
    log,
  });
  let server: Server | undefined;
  const url = () => {
    const addr = server?.address();
    if (!addr || typeof addr === "string") return undefined;
    return `https://${addr.family === "IPv6" ? `[${addr.address}]` : addr.address}:${addr.port}`;
  };
  return {
    name: "certificates",
    manager,
    async start() {
      server = await listenTls({
        host: ctx.config.core.host,
        port: cfg.port,
        contextFor: (name) => manager.secureContext(name),
        admit: (socket) => ctx.admitEdgeConnection(socket),
        serve: (socket) => ctx.edgeConnection(socket),
        handshakeTimeoutMs: cfg.handshakeTimeoutMs,
        log,
      });
      deps.domains.onReload(() => manager.domainsChanged());
      await manager.start();
    },
    closeUpgraded: () => void server?.close(),
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
