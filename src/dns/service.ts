import type { EdgeService, ServiceContext } from "../core/service.js";
import { registerRecordRoutes } from "./api/record-routes.js";
import { registerSettingsRoutes } from "./api/settings-routes.js";
import { registerZoneRoutes } from "./api/zone-routes.js";
import { readDnsConfig, serveOptions } from "./config.js";
import { AnswerEngine } from "./server/answer.js";
import { Notifier } from "./server/notify.js";
import { DnsServer } from "./server/server.js";
import { DNS_PG_MIGRATIONS } from "./pg-migrations.js";
import { PgDnsStore } from "./pg-store.js";
import { DNS_MIGRATIONS } from "./sqlite-migrations.js";
import { SqliteDnsStore } from "./sqlite-store.js";
import { ZoneService } from "./zones/zone-service.js";
import { ZoneSync } from "./zones/zone-sync.js";

/** Zones and records over the v4 API, and the authoritative server answering from the same memory. */
export function createDnsService(ctx: ServiceContext): EdgeService {
  const cfg = readDnsConfig(ctx.options(serveOptions));
  const pg = ctx.openPostgres("dns", DNS_PG_MIGRATIONS);
  const zones = new ZoneService(pg ? new PgDnsStore(pg, ctx.bus) : new SqliteDnsStore(ctx.openDb("dns", DNS_MIGRATIONS)));
  const log = ctx.log.child({ service: "dns" });
  // Zones changed through other nodes (PostgreSQL) are reloaded here; embedded, no one else changes them.
  const sync = new ZoneSync(zones, ctx.bus, log);
  const engine = new AnswerEngine(zones, cfg);
  const server = new DnsServer(engine, zones, cfg, log);
  const notifier = new Notifier(cfg, engine, log);
  zones.onChange((zs, kind, origin) => {
    server.invalidate();
    // Secondaries hear of a change once, from the node it was made through, not once per node.
    if (kind !== "deleted" && origin === "local") notifier.schedule(zs);
  });
  return {
    name: "dns",
    async registerApi(app) {
      // The API and the server answer from the zones in memory: read them before either starts.
      await zones.load();
      // A change is answered by every UDP answering process once its API call returns: wait for their flush.
      app.addHook("onSend", async (_req, _reply, payload) => {
        await server.synced();
        return payload;
      });
      registerZoneRoutes(app, zones, cfg);
      registerSettingsRoutes(app, zones, cfg);
      await registerRecordRoutes(app, zones, cfg);
    },
    async start() {
      await zones.load();
      await server.start();
    },
    async stop() {
      sync.stop();
      notifier.stop();
      await server.stop();
    },
    // The platform merges these into its endpoints (tests read dns_udp/dns_tcp from "platform ready").
    describe: () => ({ dns_udp: server.address(), dns_tcp: server.address() }),
  };
}
