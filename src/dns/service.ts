import type { EdgeService, ServiceContext } from "../core/service.js";
import { registerRecordRoutes } from "./api/record-routes.js";
import { registerSettingsRoutes } from "./api/settings-routes.js";
import { registerZoneRoutes } from "./api/zone-routes.js";
import { readDnsConfig, serveOptions } from "./config.js";
import { AnswerEngine } from "./server/answer.js";
import { Notifier } from "./server/notify.js";
import { DnsServer } from "./server/server.js";
import { DNS_MIGRATIONS } from "./sqlite-migrations.js";
import { SqliteDnsStore } from "./sqlite-store.js";
import { ZoneService } from "./zones/zone-service.js";
import { registerTransferRoutes } from "./transfers/routes.js";
import { createTransfers } from "./transfers/transfers.js";

/** Zones and records over the v4 API, and the authoritative server answering from the same memory. */
export function createDnsService(ctx: ServiceContext): EdgeService {
  const cfg = readDnsConfig(ctx.options(serveOptions));
  const zones = new ZoneService(new SqliteDnsStore(ctx.openDb("dns", DNS_MIGRATIONS)));
  const log = ctx.log.child({ service: "dns" });
  const engine = new AnswerEngine(zones, cfg);
  const transfers = createTransfers(ctx, zones, engine, cfg, log);
  const server = new DnsServer(engine, zones, cfg, log, transfers.responder);
  const notifier = new Notifier(cfg, engine, log, (zs) => transfers.notifyTargets(zs));
  zones.onChange((zs, kind) => {
    server.invalidate();
    transfers.zoneChanged(zs, kind);
    if (kind !== "deleted") notifier.schedule(zs);
  });
  return {
    name: "dns",
    async registerApi(app) {
      // The API and the server answer from the zones in memory: read them before either starts.
      await transfers.load();
      // A change is answered by every UDP answering process once its API call returns: wait for their flush.
      app.addHook("onSend", async (_req, _reply, payload) => {
        await server.synced();
        return payload;
      });
      registerZoneRoutes(app, zones, cfg);
      registerSettingsRoutes(app, zones, cfg);
      await registerRecordRoutes(app, zones, cfg);
      registerTransferRoutes(app, zones, transfers.directory, notifier);
    },
    async start() {
      await transfers.load();
      await server.start();
    },
    async stop() {
      notifier.stop();
      await server.stop();
    },
    // The platform merges these into its endpoints (tests read dns_udp/dns_tcp from "platform ready").
    describe: () => ({ dns_udp: server.address(), dns_tcp: server.address() }),
  };
}
