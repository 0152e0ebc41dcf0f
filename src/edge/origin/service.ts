import type { IncomingMessage, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import type { EdgeService, ServiceContext } from "../../core/service.js";
import type { RawHandler, UpgradeHandler } from "../hostnames/dispatch.js";
import { createCacheFeature } from "../cache/service.js";
import { WorkerCacheApi, type CacheApiCaller } from "../cache/worker-cache.js";
import type { CacheRules, EdgeZones } from "../ports.js";
import { SETTINGS_PG_MIGRATIONS } from "../settings/pg-migrations.js";
import { PgZoneSettingsStore, SETTINGS_AREA } from "../settings/pg-store.js";
import { registerSettingsRoutes } from "../settings/routes.js";
import { SETTINGS_MIGRATIONS } from "../settings/sqlite-migrations.js";
import { SqliteZoneSettingsStore } from "../settings/sqlite-store.js";
import { ZoneSettings } from "../settings/zone-settings.js";
import { OriginAddressPolicy } from "./address-policy.js";
import { originServeOptions, readOriginConfig } from "./config.js";
import { OriginForwarder } from "./forwarder.js";
import { OriginPools } from "./pools.js";
import { TenantResolver } from "./tenant-resolver.js";

/**
 * Zone settings (v4 API) and the reverse proxy that carries proxied names' traffic to their origins. `zones` is
 * DNS's narrow port (names, accounts, what a name resolves to); `isPlatformAddress` says which addresses are the
 * platform's own (never an origin). `forward` and `upgrade` are the tenant handlers the hostname dispatch asks after
 * Workers (platform.ts adds them).
 */
export function createProxyService(
  ctx: ServiceContext,
  deps: {
    zones: EdgeZones;
    isPlatformAddress: (ip: string) => boolean;
    cacheRules?: CacheRules;
    /** The edge loops serving the edge port (edge/threads/): the cache is split among them. */
    edgeLoops?: number;
  },
): EdgeService & {
  settings: ZoneSettings;
  forward: RawHandler;
  upgrade: UpgradeHandler;
  /** Workers' subrequests (workers/runtime/outbound.ts): to their own zones' origins, else out to public addresses. */
  subrequest(req: IncomingMessage, res: ServerResponse, from: { accountId: string; script: string; ownZone(zoneId: string): boolean; cf?: string }): void;
  /** Workers' Cache API calls (caches.default, caches.open): the edge's cache of the zones the Worker is routed in. */
  cacheApi(req: IncomingMessage, res: ServerResponse, from: CacheApiCaller): void;
  /** Workers' WebSocket handshakes: to their own zones' origins while `websockets` is on (true), else false. */
  subrequestUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, from: { accountId: string; script: string; ownZone(zoneId: string): boolean }): boolean;
  /** Workers' sockets (connect()): public addresses only, names looked up under the opening script's account. */
  connectOut(target: string, socket: Duplex, head: Buffer, from: { accountId: string }): void;
} {
  const cfg = readOriginConfig(ctx.options(originServeOptions));
  const log = ctx.log.child({ service: "edge" });
  const pg = ctx.openPostgres(SETTINGS_AREA, SETTINGS_PG_MIGRATIONS);
  const settings = new ZoneSettings(
    pg ? new PgZoneSettingsStore(pg, ctx.bus) : new SqliteZoneSettingsStore(ctx.openDb("edge-settings", SETTINGS_MIGRATIONS), ctx.bus),
    log,
  );
  // A deleted zone's settings go with it: a zone of the same name made later starts from the defaults.
  deps.zones.onDeleted(
    (zoneId) => void settings.zoneDeleted(zoneId).catch((err: unknown) => log.error({ err, zoneId }, "settings of a deleted zone not removed")),
  );
  const cache = createCacheFeature(ctx, { zones: deps.zones, settings, rules: deps.cacheRules, edgeLoops: deps.edgeLoops });
  const pools = new OriginPools({ connectTimeoutMs: cfg.originConnectTimeoutMs, answerTimeoutMs: cfg.originTimeoutMs, extraCa: cfg.originCa });
  const forwarder = new OriginForwarder({
    zones: deps.zones,
    settings,
    policy: new OriginAddressPolicy(cfg.originAllow, deps.isPlatformAddress),
    pools,
    resolver: new TenantResolver(cfg.originResolvers, cfg.originConnectTimeoutMs),
    cache: cache.cache,
    connectTimeoutMs: cfg.originConnectTimeoutMs,
    answerTimeoutMs: cfg.originTimeoutMs,
    log,
  });
  const cacheApi = new WorkerCacheApi(cache.cache, deps.zones, log);
  return {
    name: "edge-proxy",
    settings,
    async registerApi(app) {
      await settings.load();
      registerSettingsRoutes(app, deps.zones, settings);
      cache.registerApi(app);
    },
    forward: (req, res) => forwarder.handle(req, res),
    upgrade: (req, socket, head) => forwarder.handleUpgrade(req, socket, head),
    connectOut: (target, socket, head, from) => forwarder.connectOut(target, socket, head, from),
    subrequestUpgrade: (req, socket, head, from) => forwarder.subrequestUpgrade(req, socket, head, from),
    subrequest: (req, res, from) => forwarder.subrequest(req, res, from, () => forwarder.outbound(req, res, from)),
    cacheApi: (req, res, from) => cacheApi.handle(req, res, from),
    closeUpgraded: () => forwarder.closeUpgraded(),
    async start() {
      settings.follow(ctx.bus);
      cache.start();
      // A change made elsewhere between the first read and the subscription is not missed.
      await settings.load();
    },
    async stop() {
      settings.stop();
      cache.stop();
      await pools.close();
    },
  };
}
