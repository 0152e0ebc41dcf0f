import { join } from "node:path";
import { SecretBox } from "../core/secret-box.js";
import type { EdgeService, ServiceContext } from "../core/service.js";
import type { Logger } from "../core/logger.js";
import type { D1Service } from "../d1/service.js";
import type { KvService } from "../kv/service.js";
import type { QueuesService, QueuesWorkers } from "../queues/service.js";
import type { R2Service } from "../r2/service.js";
import type { BindingBackendName } from "./bindings/binding-type.js";
import type { BindingHandler, BindingTunnelHandler } from "./bindings/server.js";
import { readWorkersConfig, serveOptions } from "./config.js";
import { ScriptDeployer, type ResourceExists } from "./deployer.js";
import { followOtherNodes } from "./follow-nodes.js";
import { WORKERS_PG_MIGRATIONS } from "./pg-migrations.js";
import { PgWorkersStore, scriptChanged, WORKERS_AREA } from "./pg-store.js";
import { DurableObjects } from "./durable-objects/durable-objects.js";
import { DURABLE_OBJECTS_MIGRATIONS } from "./durable-objects/sqlite-migrations.js";
import { SqliteDurableObjectsStore } from "./durable-objects/sqlite-store.js";
import { scriptOfHost, WorkerProxy } from "./runtime/proxy.js";
import { WorkersRuntime } from "./runtime/runtime.js";
import { WebSocketProxy } from "./runtime/websocket-proxy.js";
import { TailHub } from "./tail/hub.js";
import { WORKERS_MIGRATIONS } from "./sqlite-migrations.js";
import { SqliteWorkersStore } from "./sqlite-store.js";
import type { WorkersStore } from "./store.js";
import { CronClock } from "./triggers/clock.js";
import { ServiceGate } from "./services/gate.js";
import { WorkerAssets } from "./assets/assets.js";
import { collectAssetBodies } from "./assets/collect.js";
import { ASSETS_MIGRATIONS } from "./assets/sqlite-migrations.js";
import { SqliteAssetsStore } from "./assets/sqlite-store.js";
import { ASSETS_PG_MIGRATIONS } from "./assets/pg-migrations.js";
import { ASSETS_AREA, PgAssetsStore } from "./assets/pg-store.js";
import type { ZoneService } from "../dns/zones/zone-service.js";
import { ROUTES_PG_MIGRATIONS } from "./routes/pg-migrations.js";
import { PgRoutesStore, ROUTES_AREA } from "./routes/pg-store.js";
import { ROUTES_MIGRATIONS } from "./routes/sqlite-migrations.js";
import { SqliteRoutesStore } from "./routes/sqlite-store.js";
import { DomainRecords } from "./routes/dns-records.js";
import { RouteTable } from "./routes/table.js";
import { inZone } from "./routes/pattern.js";
import type { CertificateState } from "./routes/api.js";

/** How often module bytes no record names are looked for (they are removed an hour after they were written). */
const GC_INTERVAL_MS = 60 * 60 * 1000;

/** The areas whose data worker bindings reach: each checks that a resource exists and serves its binding calls. */
interface BindingBackend {
  exists(accountId: string, resource: string): Promise<boolean>;
  handle: BindingHandler;
}

/** Workers as the edge's dispatch reaches it: requests and WebSockets by Host, tail sessions on the API's hosts. */
export interface WorkersService extends EdgeService {
  handleRaw(req: import("node:http").IncomingMessage, res: import("node:http").ServerResponse): boolean;
  /** A WebSocket to a Worker (`<script>.<workers domain>`, a route or a Custom Domain); false for other hosts. */
  upgradeWorker(req: import("node:http").IncomingMessage, socket: import("node:stream").Duplex, head: Buffer): boolean;
  /** A `wrangler tail` session's WebSocket (`/tail/v1/<id>`); false for other paths. */
  upgradeTail(req: import("node:http").IncomingMessage, socket: import("node:stream").Duplex, head: Buffer): boolean;
  /** Custom Domains as the edge's certificates see them (hostname and account), and when they were read again. */
  customDomains: {
    all(): Promise<{ hostname: string; accountId: string }[]>;
    at(hostname: string): { hostname: string; accountId: string } | undefined;
    onReload(listener: () => void): void;
  };
}

/** The certificates of Custom Domains, when the platform orders them (--edge-tls-port; the edge's certificates). */
export interface CustomDomainCertificates {
  state(hostname: string, accountId: string): CertificateState;
  notIssued(accountId: string, hostnames: Iterable<string>): number;
  /** --acme-pending-per-account */
  pendingPerAccount: number;
}

export function createWorkersService(
  ctx: ServiceContext,
  deps: {
    kv: KvService;
    r2: R2Service;
    d1: D1Service;
    queues: QueuesService;
    zones: ZoneService;
    /** The addresses proxied names are answered with (`--edge-ipv4`, `--edge-ipv6`): Custom Domains' records answer them. */
    edgeAddresses: { ipv4: readonly string[]; ipv6: readonly string[] };
    /** Undefined unless the platform orders certificates (--edge-tls-port). */
    certificates?: CustomDomainCertificates;
  },
): WorkersService {
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
    [
      "queues",
      {
        exists: (accountId, name) => deps.queues.queueExists(accountId, name),
        handle: (call, req, res) => deps.queues.bindingHandler({ accountId: call.accountId, queueName: call.resource }, req, res),
      },
    ],
    [
      "assets",
      {
        // Never a target of an existence check: an assets binding names no resource (see assets/binding.ts).
        exists: async () => false,
        handle: (call, req, res) => void assets.serveBinding(call.accountId, call.resource, req, res).catch((err: unknown) => bindingFailed(err, res)),
      },
    ],
    [
      "service",
      {
        exists: async (accountId, name) => (await store.get(accountId, name)) !== undefined,
        handle: (call, req, res) => gate.fetch(call, req, res),
      },
    ],
  ]);
  const exists: ResourceExists = (backend, accountId, resource) => backends.get(backend)!.exists(accountId, resource);
  // Someone starting or stopping to tail a script starts it again with or without the tail worker (as a deploy does).
  const tails: TailHub = new TailHub(log, (script): Promise<void> => deployer.sync(script));
  const runtime = new WorkersRuntime(
    new Map([...[...backends].map(([name, b]) => [name, b.handle] as const), ["tail", tails.bindingHandler] as const]),
    join(ctx.config.stateDir, "workers-run"),
    log,
    config.workerdPath,
    new Map<BindingBackendName, BindingTunnelHandler>([["service", (call, socket, head) => gate.tunnel(call, socket, head)]]),
    (name) => tails.tailed(name),
  );
  // On several nodes (--database-url) there is no Durable Objects store: an object must have one instance cluster-wide,
  // which nothing provides yet, so uploads that use Durable Objects are refused (DurableObjectsErrors.distributed).
  const durableObjects = new DurableObjects(
    ctx.postgres ? undefined : new SqliteDurableObjectsStore(ctx.openDb("durable-objects", DURABLE_OBJECTS_MIGRATIONS)),
    join(ctx.config.stateDir, "durable-objects"),
    log,
  );
  const assetsPg = ctx.openPostgres(ASSETS_AREA, ASSETS_PG_MIGRATIONS);
  const assetsStore = assetsPg
    ? new PgAssetsStore(assetsPg, ctx.content("worker-assets"))
    : new SqliteAssetsStore(ctx.openDb("worker-assets", ASSETS_MIGRATIONS), ctx.content("worker-assets"));
  const assets: WorkerAssets = new WorkerAssets(
    assetsStore,
    (name) => {
      const rt = runtime.lookup(name);
      return rt?.accountId && rt.versionId ? { accountId: rt.accountId, versionId: rt.versionId } : undefined;
    },
    log,
  );
  const bindingFailed = (err: unknown, res: import("node:http").ServerResponse) => {
    log.error({ err }, "static assets binding call failed");
    if (!res.headersSent) res.writeHead(500).end();
    else res.destroy();
  };
  // Routes and Custom Domains (routes/): hostnames of the platform's DNS zones served by a Worker of the zone's account.
  const routesPg = ctx.openPostgres(ROUTES_AREA, ROUTES_PG_MIGRATIONS);
  const routesStore = routesPg ? new PgRoutesStore(routesPg, ctx.bus) : new SqliteRoutesStore(ctx.openDb("worker-routes", ROUTES_MIGRATIONS));
  const zoneOf = (zs: ReturnType<ZoneService["get"]>) => zs && { id: zs.zone.id, name: zs.zone.name, accountId: zs.zone.account_id };
  const zones = {
    byId: (id: string) => zoneOf(deps.zones.get(id)),
    byName: (name: string) => zoneOf(deps.zones.named(name)),
    enclosing: (hostname: string) => zoneOf(deps.zones.zoneFor(hostname)),
  };
  const routeTable = new RouteTable(routesStore, zones, log);
  const certificates = deps.certificates;
  const domainRecords = new DomainRecords(deps.zones, deps.edgeAddresses, (id) => routeTable.domain(id), log);
  const reloadRoutes = () => routeTable.reload().catch((err: unknown) => log.error({ err }, "could not read the Workers routes again"));
  // A deleted zone takes its routes and domains with it (made once, by the node it was deleted through). A zone that
  // appears is read again too: on another node, a route's notice can come before its zone does (table.ts leaves out
  // routes of zones it does not know).
  /**
   * Custom Domains whose hostname is now answered from another zone of their account move there with their record
   * (dns-records.ts repair): at start, and when a zone is created inside one of the account's zones.
   */
  const rehomeDomains = async (inZoneName?: string) => {
    const all = await routesStore.allDomains();
    const domains = inZoneName === undefined ? all : all.filter((d) => inZone(d.hostname, inZoneName));
    const moved = await domainRecords.repair(domains, async (d, zone) => {
      await routesStore.putDomain({ ...d, zoneId: zone.zone.id, zoneName: zone.zone.name }, true);
    });
    if (moved > 0) await reloadRoutes();
  };
  deps.zones.onChange((zs, kind, origin) => {
    if (kind === "created") {
      // Made once, by the node the zone was created through; the others read the moved domains from its notice.
      if (origin === "local")
        void rehomeDomains(zs.zone.name).catch((err: unknown) =>
          log.error({ err, zone: zs.zone.name }, "Custom Domains of a new zone's names were not moved to it"),
        );
      return void reloadRoutes();
    }
    if (kind !== "deleted") return;
    void (origin === "local" ? routesStore.deleteZone(zs.zone.id) : Promise.resolve())
      .catch((err: unknown) => log.error({ err, zone: zs.zone.name }, "the Workers routes of a deleted zone were not removed"))
      .then(reloadRoutes);
  });
  /**
   * The Worker an edge request is for: `<name>.<workers domain>` unless that URL is turned off, else the route or
   * Custom Domain its Host and path match (names are unique; the account is checked too).
   */
  const edgeScript = (req: import("node:http").IncomingMessage): string | undefined => {
    const name = scriptOfHost(req.headers.host, config.domain);
    if (name !== undefined) return routeTable.atWorkersDomain(name) ? name : undefined;
    const target = routeTable.match(req.headers.host, req.url ?? "/");
    if (!target?.script) return undefined;
    const rt = runtime.lookup(target.script);
    return rt && rt.accountId !== target.accountId ? undefined : target.script;
  };
  const deployer = new ScriptDeployer(store, runtime, exists, log, durableObjects, assets, {
    isConsumer: async (accountId, name) => (await deps.queues.store.consumersOfScript(accountId, name)).length > 0,
    // A tail session ends with its script: the next account to take the name tails its own Worker, not through it.
    nameOwner: (name, accountId) => tails.nameOwner(name, accountId),
    // A deleted Worker's routes and Custom Domains go too: names are unique platform-wide, so a route left behind
    // would send its hostname to whichever account next takes the name.
    scriptRemoved: async (accountId, name) => {
      await deps.queues.store.deleteConsumersOfScript(accountId, name);
      const domains = (await routesStore.domains(accountId)).filter((d) => d.service === name);
      await routesStore.deleteScript(accountId, name);
      await reloadRoutes();
      await domainRecords.detachAll(domains);
    },
  });
  const proxy = new WorkerProxy(runtime, config.domain, config.answerTimeoutMs, log);
  const gate: ServiceGate = new ServiceGate(runtime, proxy, log);
  const webSockets = new WebSocketProxy(runtime, config.domain, config.webSockets, log, edgeScript);
  const clock = new CronClock(store, (s, tick) => runtime.runScheduled(s.script, s.cron, tick), log);
  let unfollow: (() => void) | undefined;
  let unfollowRoutes: (() => void) | undefined;
  let stopDelivery: (() => Promise<void>) | undefined;
  let gcTimer: NodeJS.Timeout | undefined;
  // Module bytes whose record never committed (a crash, or a commit that failed after the upload started them).
  const sweep = async () => {
    const removed = await store.gcContent();
    if (removed) log.info({ removed }, "removed unreferenced worker module files");
    const assetBodies = await collectAssetBodies(assetsStore);
    if (assetBodies.marked || assetBodies.removed)
      log.info(assetBodies, "static asset files no Worker uses: marked newly unused, removed after the grace time");
  };
  const urlOf = (name: string) => {
    const edge = new URL(ctx.edgeUrl());
    return `http://${name}.${config.domain}${edge.port ? `:${edge.port}` : ""}`;
  };

  return {
    name: "workers",
    async registerApi(app) {
      const [
        { registerMultipart },
        { registerWorkersRoutes },
        { uploadMultipartLimits },
        { registerDurableObjectRoutes },
        { registerTailRoutes },
        { registerAssetsRoutes },
        { registerRoutesApi },
      ] = await Promise.all([
        import("../core/http/multipart.js"),
        import("./api/routes.js"),
        import("./api/upload.js"),
        import("./durable-objects/api.js"),
        import("./tail/api.js"),
        import("./assets/api.js"),
        import("./routes/api.js"),
      ]);
      registerRoutesApi(app, {
        store: routesStore,
        zones,
        scriptExists: async (accountId, name) => (await store.get(accountId, name)) !== undefined,
        records: domainRecords,
        changed: () => routeTable.reload(),
        log,
        certificateOf: certificates && ((hostname, accountId) => certificates.state(hostname, accountId)),
        platformHostnames: ctx.platformHostnames,
        pendingCertificates: certificates && {
          notIssued: (accountId, hostnames) => certificates.notIssued(accountId, hostnames),
          max: certificates.pendingPerAccount,
        },
      });
      registerDurableObjectRoutes(app, durableObjects);
      registerAssetsRoutes(app, assets);
      registerTailRoutes(app, { store, hub: tails, distributedNode: ctx.postgres ? ctx.nodeId : undefined });
      await registerMultipart(app, uploadMultipartLimits);
      registerWorkersRoutes(app, {
        store,
        deployer,
        urlOf,
        workersDomain: config.domain,
        newestCompatibilityDate: () => runtime.workerd?.newestCompatibilityDate,
        handlersOf: (name, versionId) => runtime.handlersOf(name, versionId),
        triggersChanged: () => clock.reload(),
        migrationTag: (accountId, name) => durableObjects.migrationTag(accountId, name),
        workersDev: {
          enabled: (name) => routeTable.atWorkersDomain(name),
          set: async (accountId, name, enabled) => {
            await routesStore.setWorkersDev(accountId, name, enabled);
            await routeTable.reload();
          },
        },
      });
    },
    handleRaw: (req, res) => {
      // Static assets are answered before the Worker (assets/assets.ts says when).
      const name = edgeScript(req);
      if (!name) return false;
      if (!runtime.lookup(name)) {
        proxy.serve(name, req, res);
        return true;
      }
      const failed = (err: unknown) => {
        log.error({ err, script: name }, "serving static assets failed");
        if (!res.headersSent) res.writeHead(502).end();
        else res.destroy();
      };
      try {
        // Answered in this turn when the live version's assets are known (the usual case), else once they are read.
        assets.serveEdge(name, req, res, runtime.handlersOf(name), () => proxy.serve(name, req, res))?.catch(failed);
      } catch (err) {
        failed(err);
      }
      return true;
    },
    upgradeWorker: (req, socket, head) => webSockets.handle(req, socket, head),
    upgradeTail: (req, socket, head) => tails.handleUpgrade(req, socket, head),
    // Tail sessions are upgraded connections too: the edge port's close waits for them (each is cut 2 s after its
    // close frame at the latest, trace-socket.ts).
    closeUpgraded: () => {
      webSockets.closeAll();
      tails.stop();
    },
    async start() {
      await pgStore?.checkKey();
      await runtime.start();
      // Before the first sync, so that a deploy made elsewhere meanwhile is not missed.
      unfollow = followOtherNodes(ctx.bus, deployer, clock, log);
      unfollowRoutes = routeTable.follow(ctx.bus);
      await routeTable.reload();
      await deps.zones.load();
      await rehomeDomains();
      await deployer.syncAll();
      // In the background: listing a bucket can be slow, and the start does not depend on it.
      const sweepLogged = () => void sweep().catch((err: unknown) => log.warn({ err }, "worker file sweep failed"));
      sweepLogged();
      gcTimer = setInterval(sweepLogged, GC_INTERVAL_MS);
      gcTimer.unref();
      await clock.start();
      stopDelivery = deps.queues.startDelivery(queueWorkers(store, runtime, deployer, log, (name) => ctx.bus.publish(WORKERS_AREA, scriptChanged(name))));
    },
    describe: () => ({ workers: urlOf("<script>") }),
    customDomains: {
      all: () => routesStore.allDomains(),
      at: (hostname) => routeTable.domainAt(hostname),
      onReload: (listener) => routeTable.onReload(listener),
    },
    async stop() {
      unfollow?.();
      unfollowRoutes?.();
      await stopDelivery?.();
      clearInterval(gcTimer);
      clock.stop();
      tails.stop();
      await runtime.stop();
    },
  };
}

/**
 * What Queues needs of Workers: whether a script exists, running a consumer's queue() on its workerd, and running a
 * script that became or ceased to be a consumer again (here, then on the other nodes through a notice).
 */
function queueWorkers(
  store: WorkersStore,
  runtime: WorkersRuntime,
  deployer: ScriptDeployer,
  log: Logger,
  notify: (name: string) => Promise<void>,
): QueuesWorkers {
  return {
    scriptExists: async (accountId, name) => (await store.get(accountId, name)) !== undefined,
    producersOf: async (accountId) => {
      const producers = new Map<string, string[]>();
      for (const s of await store.list(accountId)) {
        for (const b of s.bindings) {
          if (b.type !== "queue") continue;
          const scripts = producers.get(b.queue_name) ?? [];
          if (!scripts.includes(s.name)) scripts.push(s.name);
          producers.set(b.queue_name, scripts);
        }
      }
      return producers;
    },
    consumersChanged: async (accountId, names) => {
      for (const name of names) {
        if (!(await store.get(accountId, name))) continue;
        // The consumer is recorded either way: a script that cannot start again keeps running as it was (and is
        // not delivered to) until it next starts.
        await deployer
          .sync(name)
          .catch((err: unknown) => log.error({ script: name, err: (err as Error).message }, "could not restart the Worker after its queue consumers changed"));
        await notify(name);
      }
    },
    deliverer: {
      // Script names are unique platform-wide; the account check keeps a consumer from reaching another account's script.
      // During a gradual deployment either version may take the batch (pickWith prefers the one with queue()), so
      // the consumer is ready when one of them has queue(), not only the primary.
      ready: (c) => runtime.runtimesOf(c.script_name).some((rt) => rt.accountId === c.account_id && rt.queueConsumer && rt.handlers.includes("queue")),
      deliver: async (c, messages, timeoutMs) => {
        // During a gradual deployment, a batch goes to one of the two versions, by share (to the one with queue() if only one has it).
        const rt = runtime.pickWith(c.script_name, "queue");
        const outcome = rt && rt.accountId === c.account_id ? await rt.runQueue(c.queue_name, messages, timeoutMs) : undefined;
        if (!outcome) throw new Error(`the Worker ${c.script_name} does not run here with a queue() handler`);
        return outcome;
      },
    },
  };
}
