import type { EdgeService, ServiceContext } from "../core/service.js";
import { kvBindingOperation, kvOperationMetrics } from "./metrics.js";
import { createKvBindingHandler, type KvBindingHandler } from "./binding.js";
import { SqliteBulkWriter } from "./bulk/sqlite-writer.js";
import { readKvConfig, serveOptions } from "./config.js";
import { KV_MIGRATIONS } from "./sqlite-migrations.js";
import { SqliteKvStore } from "./sqlite-store.js";
import { PgBulkWriter } from "./bulk/pg-writer.js";
import { KV_PG_MIGRATIONS } from "./pg-migrations.js";
import { PgKvStore } from "./pg-store.js";
import type { KvBulkWriter, KvStore } from "./store.js";

export interface KvService extends EdgeService {
  /** Serves workerd's KV binding protocol; mounted by the workers service behind its loopback server. */
  readonly bindingHandler: KvBindingHandler;
  /** Whether `namespaceId` is a namespace of `accountId` (a worker's binding must name one). */
  namespaceExists(accountId: string, namespaceId: string): Promise<boolean>;
}

/** Content files no row names (a crash between file and commit) are looked for about hourly. */
const CONTENT_GC_MS = 60 * 60 * 1000;

/** The store of this node's backend and its bulk writer; `cleanUp` removes what bulk writes a crash interrupted left. */
function openBackend(ctx: ServiceContext): { store: KvStore; bulk: KvBulkWriter & { stop(): Promise<void> }; cleanUp(): Promise<unknown> } {
  const content = ctx.content("kv");
  // Every node shares the PostgreSQL rows and keeps a read cache of them, which the bus's notices keep fresh.
  const pg = ctx.openPostgres("kv", KV_PG_MIGRATIONS);
  if (pg) {
    const store = new PgKvStore(pg, content, { bus: ctx.bus });
    const bulk = new PgBulkWriter(pg, store);
    return { store, bulk, cleanUp: () => bulk.abandonStale() };
  }
  const db = ctx.openDb("kv", KV_MIGRATIONS);
  const store = new SqliteKvStore(db, content);
  const bulk = new SqliteBulkWriter(db, store, content, ctx.log);
  return { store, bulk, cleanUp: async () => bulk.cleanUpLeftovers() };
}

export function createKvService(ctx: ServiceContext): KvService {
  const config = readKvConfig(ctx.options(serveOptions));
  const { store, bulk, cleanUp } = openBackend(ctx);
  let timer: NodeJS.Timeout | undefined;
  let lastGc = Date.now();
  let running: Promise<unknown> = Promise.resolve();
  const metrics = ctx.metrics && kvOperationMetrics(ctx.metrics);
  const kvBinding = createKvBindingHandler(store);

  // Expired entries are invisible at once; the sweep only reclaims their space.
  const sweep = async () => {
    const purged = await store.purgeExpired();
    if (purged) ctx.log.debug({ purged }, "kv: purged expired entries");
    if (Date.now() - lastGc >= CONTENT_GC_MS) {
      lastGc = Date.now();
      await cleanUp();
      await store.gcContent();
    }
  };

  return {
    name: "kv",
    bindingHandler: (ns, req, res) => {
      metrics?.track(kvBindingOperation(req), "binding", req, res);
      kvBinding(ns, req, res);
    },
    namespaceExists: async (accountId, namespaceId) => (await store.getNamespace(accountId, namespaceId)) !== undefined,
    async registerApi(app) {
      const { registerKvRoutes } = await import("./routes.js");
      registerKvRoutes(app, store, bulk, metrics);
    },
    async start() {
      running = cleanUp().catch((err: unknown) => ctx.log.warn({ err }, "kv: cleaning up interrupted bulk writes failed"));
      timer = setInterval(() => {
        running = sweep().catch((err: unknown) => ctx.log.warn({ err }, "kv: background purge failed"));
      }, config.purgeIntervalMs);
      timer.unref();
    },
    async stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
      await running;
      await bulk.stop();
    },
  };
}
