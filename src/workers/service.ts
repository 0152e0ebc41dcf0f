import { join } from "node:path";
import { SecretBox } from "../core/secret-box.js";
import type { EdgeService, ServiceContext } from "../core/service.js";
import type { D1Service } from "../d1/service.js";
import type { KvService } from "../kv/service.js";
import type { R2Service } from "../r2/service.js";
import type { BindingBackendName } from "./bindings/binding-type.js";
import type { BindingHandler } from "./bindings/server.js";
import { readWorkersConfig, serveOptions } from "./config.js";
import { ScriptDeployer, type ResourceExists } from "./deployer.js";
import { followOtherNodes } from "./follow-nodes.js";
import { WORKERS_PG_MIGRATIONS } from "./pg-migrations.js";
import { PgWorkersStore, WORKERS_AREA } from "./pg-store.js";
import { DurableObjects } from "./durable-objects/durable-objects.js";
import { DURABLE_OBJECTS_MIGRATIONS } from "./durable-objects/sqlite-migrations.js";
import { SqliteDurableObjectsStore } from "./durable-objects/sqlite-store.js";
import { WorkerProxy } from "./runtime/proxy.js";
import { WorkersRuntime } from "./runtime/runtime.js";
import { WebSocketProxy } from "./runtime/websocket-proxy.js";
import { TailHub } from "./tail/hub.js";
import { WORKERS_MIGRATIONS } from "./sqlite-migrations.js";
import { SqliteWorkersStore } from "./sqlite-store.js";
import type { WorkersStore } from "./store.js";
import { CronClock } from "./triggers/clock.js";

/** How often module bytes no record names are looked for (they are removed an hour after they were written). */
const GC_INTERVAL_MS = 60 * 60 * 1000;

/** The areas whose data worker bindings reach: each checks that a resource exists and serves its binding calls. */
interface BindingBackend {
  exists(accountId: string, resource: string): Promise<boolean>;
  handle: BindingHandler;
}

export function createWorkersService(ctx: ServiceContext, deps: { kv: KvService; r2: R2Service; d1: D1Service }): EdgeService {
  const config = readWorkersConfig(ctx.options(serveOptions));
  const box = SecretBox.load(ctx.config.stateDir);
  const pg = ctx.openPostgres(WORKERS_AREA, WORKERS_PG_MIGRATIONS);
  const pgStore = pg && new PgWorkersStore(pg, ctx.content("workers"), box, ctx.bus);
  const store: WorkersStore = pgStore ?? new SqliteWorkersStore(ctx.openDb("workers", WORKERS_MIGRATIONS), ctx.content("workers"), box);
  const log = ctx.log.child({ service: "workers" });
  const backends = new Map<BindingBackendName, BindingBackend>([
    [
      "r2",
      {
        exists: async (accountId, bucket) => (await deps.r2.store.getBucket(accountId, bucket)) !== undefined,
        handle: (call, req, res) => deps.r2.bindingHandler({ accountId: call.accountId, bucketName: call.resource }, req, res),
      },
    ],
    [
      "kv",
      {
        exists: (accountId, id) => deps.kv.namespaceExists(accountId, id),
        handle: (call, req, res) => deps.kv.bindingHandler({ accountId: call.accountId, namespaceId: call.resource }, req, res),
      },
    ],
    [
      "d1",
      {
        exists: (accountId, uuid) => deps.d1.databaseExists(accountId, uuid),
        handle: (call, req, res) => deps.d1.bindingHandler({ accountId: call.accountId, databaseId: call.resource }, req, res),
      },
    ],
  ]);
  const exists: ResourceExists = (backend, accountId, resource) => backends.get(backend)!.exists(accountId, resource);
  const tails = new TailHub(log);
  const runtime = new WorkersRuntime(
    new Map([...[...backends].map(([name, b]) => [name, b.handle] as const), ["tail", tails.bindingHandler] as const]),
    join(ctx.config.stateDir, "workers-run"),
    log,
    config.workerdPath,
  );
  // On several nodes (--database-url) there is no Durable Objects store: an object must have one instance cluster-wide,
  // which nothing provides yet, so uploads that use Durable Objects are refused (DurableObjectsErrors.distributed).
  const durableObjects = new DurableObjects(
    ctx.postgres ? undefined : new SqliteDurableObjectsStore(ctx.openDb("durable-objects", DURABLE_OBJECTS_MIGRATIONS)),
    join(ctx.config.stateDir, "durable-objects"),
    log,
  );
  const deployer = new ScriptDeployer(store, runtime, exists, log, durableObjects);
  const proxy = new WorkerProxy(runtime, config.domain, log);
  const webSockets = new WebSocketProxy(runtime, config.domain, log);
  const clock = new CronClock(store, (s, tick) => runtime.runScheduled(s.script, s.cron, tick), log);
  let unfollow: (() => void) | undefined;
  let gcTimer: NodeJS.Timeout | undefined;
  // Module bytes whose record never committed (a crash, or a commit that failed after the upload started them).
  const sweep = async () => {
    const removed = await store.gcContent();
    if (removed) log.info({ removed }, "removed unreferenced worker module files");
  };
  const urlOf = (name: string) => {
    const edge = new URL(ctx.edgeUrl());
    return `http://${name}.${config.domain}${edge.port ? `:${edge.port}` : ""}`;
  };

  return {
    name: "workers",
    async registerApi(app) {
      const [{ registerMultipart }, { registerWorkersRoutes }, { uploadMultipartLimits }, { registerDurableObjectRoutes }, { registerTailRoutes }] =
        await Promise.all([
          import("../core/http/multipart.js"),
          import("./api/routes.js"),
          import("./api/upload.js"),
          import("./durable-objects/api.js"),
          import("./tail/api.js"),
        ]);
      registerDurableObjectRoutes(app, durableObjects);
      registerTailRoutes(app, { store, hub: tails, distributedNode: ctx.postgres ? ctx.nodeId : undefined });
      await registerMultipart(app, uploadMultipartLimits);
      registerWorkersRoutes(app, {
        store,
        deployer,
        urlOf,
        workersDomain: config.domain,
        newestCompatibilityDate: () => runtime.workerd?.newestCompatibilityDate,
        handlersOf: (name) => runtime.handlersOf(name),
        triggersChanged: () => clock.reload(),
        migrationTag: (accountId, name) => durableObjects.migrationTag(accountId, name),
      });
    },
    handleRaw: (req, res) => proxy.handle(req, res),
    handleUpgrade: (req, socket, head) => webSockets.handle(req, socket, head) || tails.handleUpgrade(req, socket, head),
    async start() {
      await pgStore?.checkKey();
      await runtime.start();
      // Before the first sync, so that a deploy made elsewhere meanwhile is not missed.
      unfollow = followOtherNodes(ctx.bus, deployer, clock, log);
      await deployer.syncAll();
      // In the background: listing a bucket can be slow, and the start does not depend on it.
      const sweepLogged = () => void sweep().catch((err: unknown) => log.warn({ err }, "worker module sweep failed"));
      sweepLogged();
      gcTimer = setInterval(sweepLogged, GC_INTERVAL_MS);
      gcTimer.unref();
      await clock.start();
    },
    describe: () => ({ workers: urlOf("<script>") }),
    async stop() {
      unfollow?.();
      clearInterval(gcTimer);
      clock.stop();
      tails.stop();
      await runtime.stop();
    },
  };
}
