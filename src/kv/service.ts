import type { EdgeService, ServiceContext } from "../core/service.js";
import { createKvBindingHandler, type KvBindingHandler } from "./binding.js";
import { SqliteBulkWriter } from "./bulk/sqlite-writer.js";
import { readKvConfig, serveOptions } from "./config.js";
import { KV_MIGRATIONS } from "./sqlite-migrations.js";
import { SqliteKvStore } from "./sqlite-store.js";

export interface KvService extends EdgeService {
  /** Serves workerd's KV binding protocol; mounted by the workers service behind its loopback server. */
  readonly bindingHandler: KvBindingHandler;
  /** Whether `namespaceId` is a namespace of `accountId` (a worker's binding must name one). */
  namespaceExists(accountId: string, namespaceId: string): Promise<boolean>;
}

/** Content files no row names (a crash between file and commit) are looked for about hourly. */
const CONTENT_GC_MS = 60 * 60 * 1000;

export function createKvService(ctx: ServiceContext): KvService {
  const config = readKvConfig(ctx.options(serveOptions));
  const db = ctx.openDb("kv", KV_MIGRATIONS);
  const content = ctx.content("kv");
  const store = new SqliteKvStore(db, content);
  const bulk = new SqliteBulkWriter(db, store, content, ctx.log);
  let timer: NodeJS.Timeout | undefined;
  let lastGc = Date.now();
  let running: Promise<unknown> = Promise.resolve();

  // Expired entries are invisible at once; the sweep only reclaims their space.
  const sweep = async () => {
    const purged = await store.purgeExpired();
    if (purged) ctx.log.debug({ purged }, "kv: purged expired entries");
    if (Date.now() - lastGc >= CONTENT_GC_MS) {
      lastGc = Date.now();
      await store.gcContent();
    }
  };

  return {
    name: "kv",
    bindingHandler: createKvBindingHandler(store),
    namespaceExists: async (accountId, namespaceId) => (await store.getNamespace(accountId, namespaceId)) !== undefined,
    async registerApi(app) {
      const { registerKvRoutes } = await import("./routes.js");
      registerKvRoutes(app, store, bulk);
    },
    async start() {
      bulk.cleanUpLeftovers();
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
