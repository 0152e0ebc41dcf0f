import type { IncomingMessage, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import { join } from "node:path";
import { SecretBox } from "../core/secret-box.js";
import type { EdgeService, ServiceContext } from "../core/service.js";
import type { QueuesService } from "../queues/service.js";
import type { ZonesPort } from "../dns/service.js";
import { registerWorkersApi } from "./api/register.js";
import { WorkerAssets } from "./assets/assets.js";
import { resourceExists, type DataBindingBackends } from "./bindings/backends.js";
import { readWorkersConfig, serveOptions } from "./config.js";
import { startContentSweep } from "./content-sweep.js";
import { ScriptDeployer } from "./deployer.js";
import { DurableObjects } from "./durable-objects/durable-objects.js";
import { edgeRequestHandler } from "./edge-requests.js";
import { followOtherNodes } from "./follow-nodes.js";
import { scriptChanged, WORKERS_AREA } from "./pg-store.js";
import { WorkerRouting } from "./routing/routing.js";
import { ROUTES_AREA, ROUTES_CHANGED } from "./routing/pg-store.js";
import { WorkerProxy } from "./runtime/proxy.js";
import { WorkersMetrics } from "./metrics.js";
import { WorkerOutbound, type SubrequestPort } from "./runtime/outbound.js";
import { WorkersRuntime } from "./runtime/runtime.js";
import { WebSocketProxy } from "./runtime/websocket-proxy.js";
import { ServiceGate } from "./services/gate.js";
import { openWorkersStores } from "./stores.js";
import { TailHub } from "./tail/hub.js";
import { WorkersLogs } from "./logs/logs.js";
import { CronClock } from "./triggers/clock.js";
import { workersForQueues } from "./workers-for-queues.js";
import type { CertificateState } from "./routing/api.js";
import type { WorkerInvocation, WorkerSubrequest } from "./analytics.js";

/** Workers as the edge's dispatch reaches it: requests and WebSockets by Host, tail sessions on the API's hosts. */
export interface WorkersService extends EdgeService {
  handleRaw(req: IncomingMessage, res: ServerResponse): boolean;
  /**
   * Whether `handleRaw` may take a request with this Host (as sent) on some path: false only when no route, Custom
   * Domain or `<script>.<workers domain>` name could match it, as of the route table's last read.
   */
  mayServe(host: string | undefined): boolean;
  /** Changes whenever the route table is read again (what `mayServe` answers from). */
  routesGeneration(): number;
  /** A WebSocket to a Worker (`<script>.<workers domain>`, a route or a Custom Domain); false for other hosts. */
  upgradeWorker(req: IncomingMessage, socket: Duplex, head: Buffer): boolean;
  /** Where scripts' subrequests go: the edge's forwarder (edge/origin), handed over by platform.ts. */
  attachSubrequests(port: SubrequestPort): void;
  /** Where each invocation and subrequest is told (the GraphQL dataset workersInvocationsAdaptive), handed over by platform.ts. */
  attachAnalytics(listeners: { invocation(e: WorkerInvocation): void; subrequest(e: WorkerSubrequest): void }): void;
  /** A `wrangler tail` session's WebSocket (`/tail/v1/<id>`); false for other paths. */
  upgradeTail(req: IncomingMessage, socket: Duplex, head: Buffer): boolean;
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

/** The ports src/platform.ts hands the workers area: nothing of another area but these. */
export interface WorkersDeps {
  /** The areas Workers' data bindings reach (R2, KV, D1, Queues). */
  bindings: DataBindingBackends;
  /** Queues' consumers of scripts, and its delivery to them. */
  queues: Pick<QueuesService, "isConsumer" | "scriptDeleted" | "startDelivery">;
  zones: ZonesPort;
  /** The addresses proxied names are answered with (`--edge-ipv4`, `--edge-ipv6`): Custom Domains' records answer them. */
  edgeAddresses: { ipv4: readonly string[]; ipv6: readonly string[] };
  /** Undefined unless the platform orders certificates (--edge-tls-port). */
  certificates?: CustomDomainCertificates;
}

/** Wires the workers area's parts; what each does is in its own file. */
export function createWorkersService(ctx: ServiceContext, deps: WorkersDeps): WorkersService {
  const config = readWorkersConfig(ctx.options(serveOptions));
  const box = SecretBox.load(ctx.config.stateDir);
  const stores = openWorkersStores(ctx, box);
  const store = stores.scripts;
  const log = ctx.log.child({ service: "workers" });
  const scriptExists = async (accountId: string, name: string) => (await store.get(accountId, name)) !== undefined;
  const tails = new TailHub(log);
  const data = new Map(Object.entries(deps.bindings).map(([name, backend]) => [name as keyof DataBindingBackends, backend.handle] as const));
  const runtime = new WorkersRuntime(
    new Map([...data, ["tail", tails.bindingHandler] as const]),
    join(ctx.config.stateDir, "workers-run"),
    log,
    config.workerdPath,
    undefined,
    // Tailed, or its logs kept (Workers Logs): either way its workerd runs the tail worker.
    (name) => tails.reportedRate(name),
  );
  const durableObjects = new DurableObjects(stores.durableObjects, join(ctx.config.stateDir, "durable-objects"), log);
  const assets = new WorkerAssets(stores.assets, (name) => runtime.liveVersion(name), log);
  const metrics =
    ctx.metrics && new WorkersMetrics(ctx.metrics, { names: () => runtime.names(), pids: (name) => runtime.runtimesOf(name).map((rt) => rt.pid) });
  const proxy = new WorkerProxy(runtime, config.domain, config.answerTimeoutMs, log, metrics && ((name, res) => metrics.invocation(name, res)));
  const gate = new ServiceGate(runtime, proxy, log);
  runtime.mountBinding("assets", assets.bindingHandler);
  runtime.mountBinding("service", gate.fetch.bind(gate), gate.tunnel.bind(gate));
  const routing = new WorkerRouting(stores.routes, deps.zones, deps.edgeAddresses, runtime, config.domain, log);
  // On SQLite the store announces nothing: every read of the table after a change here is announced, as PostgreSQL's
  // commit does, for the edge threads that keep a table of their own (edge/threads/).
  if (!ctx.postgres) routing.table.onReload(() => void ctx.bus.publish(ROUTES_AREA, ROUTES_CHANGED));
  // Scripts' own fetch() calls: to their zones' origins through the edge (attachSubrequests), else out as any fetch.
  const outbound = new WorkerOutbound((script) => routing.table.zonesOf(script), metrics && ((script) => metrics.subrequest(script)));
  runtime.mountBinding("outbound", outbound.handle, undefined, outbound.upgrade);
  runtime.mountBinding("cache", outbound.cacheHandle);
  runtime.bindings.takeAccountTunnels(outbound.tunnel);
  const deployer = new ScriptDeployer(store, runtime, resourceExists(deps.bindings, scriptExists), log, durableObjects, assets, {
    isConsumer: (accountId, name) => deps.queues.isConsumer(accountId, name),
    // A tail session ends with its script: the next account to take the name tails its own Worker, not through it.
    nameOwner: (name, accountId) => tails.nameOwner(name, accountId),
    scriptRemoved: async (accountId, name) => {
      await logs.scriptRemoved(accountId, name);
      await deps.queues.scriptDeleted(accountId, name);
      await routing.scriptRemoved(accountId, name);
    },
  });
  // Someone starting or stopping to tail a script starts it again with or without the tail worker (as a deploy does).
  tails.onTailingChanged((script) => deployer.sync(script));
  // A Worker whose logs start or stop being kept starts again with or without the tail worker, the same way.
  const logs = new WorkersLogs(stores.logs, config.logs, log, ctx.bus, (script) => deployer.sync(script));
  tails.consume(logs);
  const webSockets = new WebSocketProxy(runtime, config.domain, config.webSockets, log, routing.edgeScript);
  const clock = new CronClock(store, (s, tick) => runtime.runScheduled(s.script, s.cron, tick), log);
  const urlOf = (name: string) => {
    const edge = new URL(ctx.edgeUrl());
    return `http://${name}.${config.domain}${edge.port ? `:${edge.port}` : ""}`;
  };
  const stopping: (() => void | Promise<void>)[] = [];

  return {
    name: "workers",
    registerApi: (app) =>
      registerWorkersApi(app, {
        ctx,
        config,
        stores,
        deployer,
        runtime,
        clock,
        durableObjects,
        assets,
        tails,
        logs,
        routing,
        certificates: deps.certificates,
        urlOf,
        log,
      }),
    handleRaw: edgeRequestHandler(routing.edgeScript, runtime, proxy, assets, log),
    mayServe: (host) => routing.mayServe(host),
    routesGeneration: () => routing.table.generation,
    upgradeWorker: (req, socket, head) => webSockets.handle(req, socket, head),
    upgradeTail: (req, socket, head) => tails.handleUpgrade(req, socket, head),
    attachSubrequests: (port) => outbound.attach(port),
    attachAnalytics(listeners) {
      proxy.onInvocation(listeners.invocation);
      outbound.onSubrequest((s) => listeners.subrequest({ accountId: s.accountId, scriptName: s.script }));
    },
    // Tail sessions are upgraded connections too: the edge port's close waits for them (each is cut 2 s after its
    // close frame at the latest, trace-socket.ts).
    closeUpgraded: () => {
      webSockets.closeAll();
      tails.stop();
    },
    async start() {
      await stores.pgScripts?.checkKey();
      await runtime.start();
      // Before the first sync, so that a deploy made elsewhere meanwhile is not missed.
      stopping.push(followOtherNodes(ctx.bus, deployer, clock, log), routing.table.follow(ctx.bus));
      await routing.table.reload();
      await deps.zones.load();
      await routing.rehoming.run();
      await logs.start();
      stopping.push(() => logs.stop());
      await deployer.syncAll();
      stopping.push(startContentSweep(store, stores.assets, log));
      await clock.start();
      const notify = (name: string) => ctx.bus.publish(WORKERS_AREA, scriptChanged(name));
      stopping.push(deps.queues.startDelivery(workersForQueues(store, runtime, deployer, log, notify)));
    },
    describe: () => ({ workers: urlOf("<script>") }),
    customDomains: {
      all: () => stores.routes.allDomains(),
      at: (hostname) => routing.table.domainAt(hostname),
      onReload: (listener) => routing.table.onReload(listener),
    },
    async stop() {
      for (const stop of stopping.splice(0)) await stop();
      clock.stop();
      tails.stop();
      await runtime.stop();
    },
  };
}
