import type { EdgeService, ServiceContext } from "../core/service.js";
import { registerRecordRoutes } from "./api/record-routes.js";
import { registerSettingsRoutes } from "./api/settings-routes.js";
import { registerZoneRoutes } from "./api/zone-routes.js";
import { readDnsConfig, serveOptions } from "./config.js";
import { AnswerEngine, type EdgeZoneSettings, type ProxyTarget } from "./nameserver/answer.js";
import { isIP } from "node:net";
import { Notifier } from "./nameserver/notify.js";
import { DnsServer } from "./server/server.js";
import { DnsMetrics } from "./metrics.js";
import type { QueryCount } from "./server/query-counts.js";
import { DNS_PG_MIGRATIONS } from "./pg-migrations.js";
import { PgDnsStore } from "./pg-store.js";
import { DNS_MIGRATIONS } from "./sqlite-migrations.js";
import { SqliteDnsStore } from "./sqlite-store.js";
import { ZoneService } from "./zones/zone-service.js";
import { zonesPort, type ZonesPort } from "./zones/zones-port.js";
import { registerTransferRoutes } from "./transfers/routes.js";
import { createTransfers } from "./transfers/transfers.js";
import { SecretBox } from "../core/secret-box.js";
import { answerSigning } from "./dnssec/answer-signing.js";
import { DnssecService } from "./dnssec/dnssec-service.js";
import { registerDnssecRoutes } from "./dnssec/routes.js";
import { DNSSEC_MIGRATIONS } from "./dnssec/sqlite-migrations.js";
import { SqliteDnssecStore } from "./dnssec/sqlite-store.js";

/** How often signatures due for replacement are looked for (dnssec/signer.ts: replaced after 7 of their 14 days). */
const SIGNATURE_SWEEP_MS = 3600_000;
import { DNS_BUS_AREA, zoneChangeNotice, ZoneSync } from "./zones/zone-sync.js";

// The types of the zones port (zonesPort), handed over with this service's type.
export type { DnsRecord } from "./model.js";
export type { ZoneState } from "./zones/zone-state.js";
export type { ZonesPort, ZoneRef } from "./zones/zones-port.js";

/** Zones and records over the v4 API, and the authoritative server answering from the same memory. */
export function createDnsService(ctx: ServiceContext): EdgeService & {
  zones: ZoneService;
  /** What the workers area is handed: its routes' zones, and the records it keeps in them (zones/zones-port.ts). */
  zonesPort: ZonesPort;
  edgeAddresses: { ipv4: readonly string[]; ipv6: readonly string[] };
  originOf(host: string): ProxyTarget;
  /** Changes whenever `originOf` may answer otherwise: any zone or record change, here or through another node. */
  originGeneration(): number;
  isPlatformAddress(ip: string): boolean;
  /** Where the answers sent are told every few seconds, by question and rcode (dnsAnalyticsAdaptiveGroups, platform.ts). */
  attachAnalytics(listener: (counts: QueryCount[], protocol: "udp" | "tcp") => void): void;
  /**
   * The edge's zone settings DNS answers by (`ipv6`: AAAA of proxied names), and their changes, after which every
   * cached answer is forgotten (here and in the UDP answering processes, which ask again).
   */
  useEdgeSettings(
    settings: EdgeZoneSettings & {
      onChange(listener: (zoneId: string | undefined, change: { ids: readonly string[]; local: boolean }) => void | Promise<void>): void;
    },
  ): void;
} {
  const cfg = readDnsConfig(ctx.options(serveOptions));
  const pg = ctx.openPostgres("dns", DNS_PG_MIGRATIONS);
  const zones = new ZoneService(pg ? new PgDnsStore(pg, ctx.bus) : new SqliteDnsStore(ctx.openDb("dns", DNS_MIGRATIONS)), {
    maxRecordsPerZone: cfg.maxRecordsPerZone,
    platformHostnames: ctx.platformHostnames,
    notices: () => ctx.bus.barrier(),
  });
  const log = ctx.log.child({ service: "dns" });
  const dnssec = new DnssecService(
    new SqliteDnssecStore(ctx.openDb("dnssec", DNSSEC_MIGRATIONS), SecretBox.load(ctx.config.stateDir)),
    { rolloverWaitSeconds: cfg.dnssecRolloverWait, distributed: ctx.postgres !== undefined },
    // A change of keys or of signing empties the answer caches (the server is made below; this runs only later), and
    // gives the zone a new serial: its secondaries then transfer the zone as now signed (or unsigned).
    (zoneId) => {
      server.invalidate();
      const zs = zoneId ? zones.get(zoneId) : undefined;
      if (zs) void zones.updateZone(zs, () => ({})).catch((err) => log.warn({ err, zone: zs.zone.name }, "zone serial not changed after a DNSSEC change"));
    },
  );
  // Zones changed through other nodes (PostgreSQL) are reloaded here; embedded, no one else changes them.
  const sync = new ZoneSync(zones, ctx.bus, log);
  // On SQLite the store announces nothing: each change made here is announced once applied, as PostgreSQL's commit
  // does, for the edge threads that answer from zones of their own (edge/threads/).
  if (!pg)
    zones.onChange((zs, _kind, origin) => {
      if (origin === "local") void ctx.bus.publish(DNS_BUS_AREA, zoneChangeNotice(zs.zone.id));
    });
  const engine = new AnswerEngine(zones, cfg, answerSigning(zones, dnssec));
  const transfers = createTransfers(ctx, zones, engine, cfg, log, () => server.invalidate());
  const server = new DnsServer(
    engine,
    zones,
    cfg,
    log,
    transfers.responder,
    (q, msg, remote) => transfers.secondary.notified(q, msg, remote),
    ctx.metrics && new DnsMetrics(ctx.metrics),
  );
  let sweep: NodeJS.Timeout | undefined;
  const notifier = new Notifier(cfg, engine, log, (zs) => transfers.notifyTargets(zs));
  zones.onChange((zs, kind, origin) => {
    server.invalidate();
    transfers.zoneChanged(zs, kind);
    if (kind === "deleted") void dnssec.remove(zs.zone.id).catch((err) => log.error({ err, zone: zs.zone.name }, "dnssec keys of a deleted zone not removed"));
    // Secondaries hear of a change once, from the node it was made through, not once per node.
    else if (origin === "local") notifier.schedule(zs);
  });
  return {
    name: "dns",
    zones,
    // Workers routes and Custom Domains read the zones (their names and accounts) from here.
    zonesPort: zonesPort(zones),
    // Workers Custom Domains' records are proxied: they answer these.
    edgeAddresses: { ipv4: cfg.edgeIpv4, ipv6: cfg.edgeIpv6 },
    // The edge forwards proxied names to the origins these answer (one resolver for DNS and the proxy).
    originOf: (host) => engine.originOf(host),
    originGeneration: () => zones.generation,
    useEdgeSettings(settings) {
      engine.useEdgeSettings(settings);
      settings.onChange((zoneId, change) => {
        server.invalidate();
        // `ipv6` changes what the zone's proxied names answer, so what its transfers send: a new serial (and so a
        // NOTIFY and an IXFR journal entry), as a record change gives. Once for the cluster: by the node it was made on.
        const zs = zoneId !== undefined && change.local && change.ids.includes("ipv6") ? zones.get(zoneId) : undefined;
        if (!zs || zs.zone.type === "secondary") return;
        return zones
          .updateZone(zs, () => ({}))
          .then(
            () => undefined,
            (err: unknown) => log.warn({ err, zone: zs.zone.name }, "zone serial not changed after its ipv6 setting changed"),
          );
      });
    },
    // The edge addresses and --platform-ranges: never an origin.
    isPlatformAddress: (ip) => {
      const family = isIP(ip);
      return family !== 0 && cfg.platformAddresses.check(ip, family === 6 ? "ipv6" : "ipv4");
    },
    attachAnalytics: (listener) => server.onCounts(listener),
    async registerApi(app) {
      // The API and the server answer from the zones in memory: read them before either starts.
      await transfers.load();
      await dnssec.load();
      // A change is answered by every UDP answering process once its API call returns: wait for their flush.
      app.addHook("onSend", async (_req, _reply, payload) => {
        await server.synced();
        return payload;
      });
      registerZoneRoutes(app, zones, cfg, transfers.secondaryRefused);
      registerSettingsRoutes(app, zones, cfg);
      await registerRecordRoutes(app, zones, cfg);
      registerTransferRoutes(app, zones, transfers, notifier);
      registerDnssecRoutes(app, zones, dnssec);
    },
    async start() {
      await transfers.load();
      await dnssec.load();
      transfers.start();
      await server.start();
      // Answer caches hold signatures inside finished answers: they are emptied when one is due for replacement.
      sweep = setInterval(() => {
        if (dnssec.signer.sweep()) server.invalidate();
      }, SIGNATURE_SWEEP_MS).unref();
    },
    async stop() {
      clearInterval(sweep);
      sync.stop();
      notifier.stop();
      transfers.stop();
      await server.stop();
    },
    // The platform merges these into its endpoints (tests read dns_udp/dns_tcp from "platform ready").
    describe: () => ({ dns_udp: server.address(), dns_tcp: server.address() }),
  };
}
