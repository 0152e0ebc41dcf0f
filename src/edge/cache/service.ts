import type { FastifyInstance } from "fastify";
import type { BusEvent } from "../../core/cluster/bus.js";
import type { ServiceContext } from "../../core/service.js";
import type { CacheRules, EdgeZones } from "../ports.js";
import type { ZoneSettings } from "../settings/zone-settings.js";
import type { Logger } from "../../core/logger.js";
import { cacheServeOptions, cacheShare, readCacheConfig, removeUnusedShares, type CacheConfig } from "./config.js";
import type { PurgeSelector } from "./disk-index.js";
import { EdgeCache } from "./http-cache.js";
import { PurgeLimits } from "./purge-limits.js";
import { PgPurgeLimitStore } from "./purge-limits-pg.js";
import { SqlitePurgeLimitStore } from "./purge-limits-sqlite.js";
import { PURGE_LIMITS_AREA, PURGE_LIMITS_MIGRATIONS, PURGE_LIMITS_PG_MIGRATIONS } from "./purge-limits-store.js";
import { registerPurgeRoutes } from "./routes.js";

/** The bus area of purges: every node removes what another node was asked to purge. */
export const CACHE_AREA = "edge-cache";
/** Notices stay under PostgreSQL's NOTIFY payload bound (8000 bytes) with room for the envelope. */
const MAX_NOTICE_CHARS = 6000;

export interface CacheFeature {
  cache: EdgeCache;
  registerApi(app: FastifyInstance): void;
  start(): void;
  stop(): void;
}

/**
 * The cache of proxied traffic on this node (edge/cache): its options, its purge API, and the purges of the other
 * nodes through the bus. `rules` is the Cache Rules port (edge/rules), when the composition root has one.
 */
export function createCacheFeature(
  ctx: ServiceContext,
  deps: {
    zones: EdgeZones;
    settings: ZoneSettings;
    rules?: CacheRules;
    /** The edge loops serving the edge port (edge/threads/): this node's cache is split among them. */
    edgeLoops?: number;
  },
): CacheFeature {
  const configured = readCacheConfig(ctx.options(cacheServeOptions), ctx.config.stateDir);
  removeUnusedShares(configured.dir, deps.edgeLoops ?? 1);
  const cfg = cacheShare(configured, 0, deps.edgeLoops ?? 1);
  const log = ctx.log.child({ service: "edge-cache" });
  const cache = newEdgeCache(cfg, deps.settings, log, deps.rules);

  // The purge rate limits are counted where every node sees them: one account's buckets for the whole cluster.
  const pg = ctx.openPostgres(PURGE_LIMITS_AREA, PURGE_LIMITS_PG_MIGRATIONS);
  const limits = new PurgeLimits(
    cfg.purgePlan,
    pg ? new PgPurgeLimitStore(pg) : new SqlitePurgeLimitStore(ctx.openDb("edge-purge-limits", PURGE_LIMITS_MIGRATIONS)),
  );

  /** Purges here, then tells the other nodes (the notices go out before the API answers). */
  const purge = async (zoneId: string, selector: PurgeSelector) => {
    const removed = cache.purge(zoneId, selector);
    log.info({ zoneId, kind: selector.kind, removed }, "cache purged");
    for (const what of notices(zoneId, selector)) await ctx.bus.publish(CACHE_AREA, what);
  };
  deps.zones.onDeleted(
    (zoneId) => void purge(zoneId, { kind: "everything" }).catch((err: unknown) => log.error({ err, zoneId }, "cache of a deleted zone not purged")),
  );

  let unsubscribe: (() => void) | undefined;
  const onEvent = purgeNotices(cache, ctx.bus.nodeId, log);
  return {
    cache,
    registerApi: (app) => registerPurgeRoutes(app, deps.zones, limits, purge),
    start() {
      unsubscribe = ctx.bus.subscribe(CACHE_AREA, onEvent);
    },
    stop() {
      unsubscribe?.();
      cache.close();
    },
  };
}

/** The cache's view of the zone settings it obeys. */
export function newEdgeCache(cfg: CacheConfig, settings: ZoneSettings, log: Logger, rules?: CacheRules): EdgeCache {
  return new EdgeCache(
    cfg,
    {
      developmentMode: (zoneId) => settings.on(zoneId, "development_mode"),
      cacheLevel: (zoneId) => String(settings.raw(zoneId, "cache_level")),
      browserCacheTtl: (zoneId) => Number(settings.raw(zoneId, "browser_cache_ttl")),
    },
    log,
    rules,
  );
}

/**
 * The bus subscriber of the cache area: applies the purges another node (or, in an edge thread, the main thread) was
 * asked for; a resync empties the cache, as purges may have been missed.
 */
export function purgeNotices(cache: EdgeCache, nodeId: string, log: Logger): (event: BusEvent) => void {
  return (event) => {
    if (event.type === "resync") {
      // Purges may have been missed while the bus was down: nothing this node holds can be trusted.
      cache.clear();
      log.warn("bus resync: this node's cache was emptied (purges sent meanwhile may have been missed)");
      return;
    }
    if (event.origin === nodeId || !event.what.startsWith("purge:")) return;
    try {
      const { zone, selector } = JSON.parse(event.what.slice(6)) as { zone: string; selector: PurgeSelector };
      cache.purge(zone, selector);
    } catch (err) {
      log.error({ err }, "a purge notice was not understood");
    }
  };
}

/**
 * A purge as bus notices, each under MAX_NOTICE_CHARS: the items are split over several; an item too long for one
 * notice purges the whole zone on the other nodes (more than asked, never less).
 */
function notices(zoneId: string, selector: PurgeSelector): string[] {
  const encode = (s: PurgeSelector) => `purge:${JSON.stringify({ zone: zoneId, selector: s })}`;
  if (selector.kind === "everything") return [encode(selector)];
  const items: string[] =
    selector.kind === "urls" ? selector.urls : selector.kind === "tags" ? selector.tags : selector.kind === "hosts" ? selector.hosts : selector.prefixes;
  const make = (part: string[]): PurgeSelector =>
    selector.kind === "urls"
      ? { kind: "urls", urls: part }
      : selector.kind === "tags"
        ? { kind: "tags", tags: part }
        : selector.kind === "hosts"
          ? { kind: "hosts", hosts: part }
          : { kind: "prefixes", prefixes: part };
  const out: string[] = [];
  let part: string[] = [];
  for (const item of items) {
    if (encode(make([item])).length > MAX_NOTICE_CHARS) return [encode({ kind: "everything" })];
    if (encode(make([...part, item])).length > MAX_NOTICE_CHARS) {
      out.push(encode(make(part)));
      part = [];
    }
    part.push(item);
  }
  if (part.length > 0) out.push(encode(make(part)));
  return out;
}
