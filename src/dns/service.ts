import { serveOptions } from "./commands.js";
import type { EdgeService, ServiceContext } from "../core/service.js";
import { AnswerEngine } from "./answer.js";
import { readDnsConfig } from "./config.js";
import type { DnsApiContext } from "./context.js";
import { Notifier } from "./notify.js";
import { registerRecordRoutes } from "./routes-records.js";
import { registerSettingsRoutes } from "./routes-settings.js";
import { registerZoneRoutes } from "./routes-zones.js";
import { DnsServer } from "./server.js";
import { DnsState } from "./state.js";
import { dnsMigrations, DnsStore } from "./store.js";

export interface DnsService extends EdgeService {
  readonly state: DnsState;
}

/** Zones and records over the v4 API, and the authoritative server answering from the same memory. */
export function createDnsService(ctx: ServiceContext): DnsService {
  const cfg = readDnsConfig(ctx.options(serveOptions));
  const state = new DnsState(new DnsStore(ctx.openDb("dns", dnsMigrations)));
  const log = ctx.log.child({ service: "dns" });
  const engine = new AnswerEngine(state, cfg);
  const server = new DnsServer(engine, state, cfg, log);
  const notifier = new Notifier(cfg, engine, log);
  state.onChange((zs, kind) => {
    server.invalidate();
    if (kind !== "deleted") notifier.schedule(zs);
  });
  const api: DnsApiContext = { state, cfg };
  return {
    name: "dns",
    state,
    async registerApi(app) {
      // A change is answered by every UDP answering process once its API call returns: wait for their flush.
      app.addHook("onSend", async (_req, _reply, payload) => {
        await server.synced();
        return payload;
      });
      registerZoneRoutes(app, api);
      registerSettingsRoutes(app, api);
      await registerRecordRoutes(app, api);
    },
    start: () => server.start(),
    async stop() {
      notifier.stop();
      await server.stop();
    },
    // The platform merges these into its endpoints (tests read dns_udp/dns_tcp from "platform ready").
    describe: () => ({ dns_udp: server.address(), dns_tcp: server.address() }),
  };
}
