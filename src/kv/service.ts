import type { EdgeService, ServiceContext } from "../core/service.js";
import { createKvBindingHandler, type KvBindingHandler } from "./binding.js";
import { KV_MIGRATIONS, SqliteKvStore, type KvStore } from "./store.js";

export interface KvService extends EdgeService {
  /** The store the API, the CLI's --local mode and worker bindings share. */
  readonly store: KvStore;
  /** Serves workerd's KV binding protocol; mounted by the workers service behind its loopback server. */
  readonly bindingHandler: KvBindingHandler;
}

/** Expired entries are invisible at once; this only reclaims their space. */
const PURGE_INTERVAL_MS = 60_000;
const CONTENT_GC_EVERY = 60; // purge rounds, i.e. about hourly

export function createKvService(ctx: ServiceContext): KvService {
  const store = new SqliteKvStore(ctx.openDb("kv", KV_MIGRATIONS), ctx.content("kv"));
  let timer: NodeJS.Timeout | undefined;
  let rounds = 0;
  let running: Promise<unknown> = Promise.resolve();

  const sweep = async () => {
    const purged = store.purgeExpired();
    if (purged) ctx.log.debug({ purged }, "kv: purged expired entries");
    if (++rounds % CONTENT_GC_EVERY === 0) await store.gcContent();
  };

  return {
    name: "kv",
    store,
    bindingHandler: createKvBindingHandler(store),
    async registerApi(app) {
      const { registerKvRoutes } = await import("./routes.js");
      registerKvRoutes(app, store);
    },
    async start() {
      timer = setInterval(() => {
        running = sweep().catch((err: unknown) => ctx.log.warn({ err }, "kv: background purge failed"));
      }, PURGE_INTERVAL_MS);
      timer.unref();
    },
    async stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
      await running;
    },
  };
}
