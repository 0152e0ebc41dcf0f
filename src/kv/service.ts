import { serveOptions } from "./commands.js";
import type { EdgeService, ServiceContext } from "../core/service.js";
import { createKvBindingHandler, type KvBindingHandler } from "./binding.js";
import { BulkWriter } from "./bulk-writer.js";
import { KV_MIGRATIONS, SqliteKvStore, type KvStore } from "./store.js";

export interface KvService extends EdgeService {
  /** The store the API, the CLI's --local mode and worker bindings share. */
  readonly store: KvStore;
  /** Serves workerd's KV binding protocol; mounted by the workers service behind its loopback server. */
  readonly bindingHandler: KvBindingHandler;
}

/** Content files no row names (a crash between file and commit) are looked for about hourly. */
const CONTENT_GC_MS = 60 * 60 * 1000;

export function createKvService(ctx: ServiceContext): KvService {
  const db = ctx.openDb("kv", KV_MIGRATIONS);
  const content = ctx.content("kv");
  const store = new SqliteKvStore(db, content);
  const bulk = new BulkWriter(db, store, content, ctx.log);
  // Expired entries are invisible at once; the sweep only reclaims their space.
  const intervalMs = Math.max(0.1, Number(ctx.options(serveOptions)["kv-purge-interval"] ?? 60)) * 1000;
  let timer: NodeJS.Timeout | undefined;
  let lastGc = Date.now();
  let running: Promise<unknown> = Promise.resolve();

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
    store,
    bindingHandler: createKvBindingHandler(store),
    async registerApi(app) {
      const { registerKvRoutes } = await import("./routes.js");
      registerKvRoutes(app, store, bulk);
    },
    async start() {
      bulk.cleanUpLeftovers();
      timer = setInterval(() => {
        running = sweep().catch((err: unknown) => ctx.log.warn({ err }, "kv: background purge failed"));
      }, intervalMs);
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
