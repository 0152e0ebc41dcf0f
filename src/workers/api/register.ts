import type { FastifyInstance } from "fastify";
import type { Logger } from "../../core/logger.js";
import type { ServiceContext } from "../../core/service.js";
import type { WorkerAssets } from "../assets/assets.js";
import type { WorkersConfig } from "../config.js";
import type { CustomDomainCertificates } from "../service.js";
import type { ScriptDeployer } from "../deployer.js";
import type { DurableObjects } from "../durable-objects/durable-objects.js";
import type { WorkerRouting } from "../routing/routing.js";
import type { WorkersRuntime } from "../runtime/runtime.js";
import type { WorkersStores } from "../stores.js";
import type { TailHub } from "../tail/hub.js";
import type { WorkersLogs } from "../logs/logs.js";
import type { CronClock } from "../triggers/clock.js";

/** The parts of the workers area its v4 API reaches (service.ts wires them). */
export interface WorkersApiParts {
  ctx: ServiceContext;
  config: WorkersConfig;
  stores: WorkersStores;
  deployer: ScriptDeployer;
  runtime: WorkersRuntime;
  clock: CronClock;
  durableObjects: DurableObjects;
  assets: WorkerAssets;
  tails: TailHub;
  logs: WorkersLogs;
  routing: WorkerRouting;
  /** Undefined unless the platform orders certificates (--edge-tls-port; the edge's certificates). */
  certificates: CustomDomainCertificates | undefined;
  urlOf: (name: string) => string;
  log: Logger;
}

/** Registers the workers area's v4 routes: scripts and versions, Durable Objects, assets, tails, routes and domains. */
export async function registerWorkersApi(app: FastifyInstance, p: WorkersApiParts): Promise<void> {
  const [
    { registerMultipart },
    { registerWorkersRoutes },
    { uploadMultipartLimits },
    { registerDurableObjectRoutes },
    { registerTailRoutes },
    { registerAssetsRoutes },
    { registerRoutesApi },
    { registerLogsRoutes },
  ] = await Promise.all([
    import("../../core/http/multipart.js"),
    import("./routes.js"),
    import("./upload.js"),
    import("../durable-objects/api.js"),
    import("../tail/api.js"),
    import("../assets/api.js"),
    import("../routing/api.js"),
    import("../logs/api.js"),
  ]);
  const { certificates, routing } = p;
  const store = p.stores.scripts;
  registerRoutesApi(app, {
    store: routing.store,
    zones: routing.zones,
    scriptExists: async (accountId, name) => (await store.get(accountId, name)) !== undefined,
    records: routing.records,
    changed: () => routing.table.reload(),
    log: p.log,
    certificateOf: certificates && ((hostname, accountId) => certificates.state(hostname, accountId)),
    platformHostnames: p.ctx.platformHostnames,
    pendingCertificates: certificates && {
      notIssued: (accountId, hostnames) => certificates.notIssued(accountId, hostnames),
      max: certificates.pendingPerAccount,
    },
  });
  registerDurableObjectRoutes(app, p.durableObjects);
  registerLogsRoutes(app, { store: p.stores.logs, retentionMs: p.config.logs.retentionMs });
  registerAssetsRoutes(app, p.assets);
  registerTailRoutes(app, { store, hub: p.tails, distributedNode: p.ctx.postgres ? p.ctx.nodeId : undefined });
  await registerMultipart(app, uploadMultipartLimits);
  registerWorkersRoutes(app, {
    store,
    deployer: p.deployer,
    urlOf: p.urlOf,
    workersDomain: p.config.domain,
    newestCompatibilityDate: () => p.runtime.workerd?.newestCompatibilityDate,
    handlersOf: (name, versionId) => p.runtime.handlersOf(name, versionId),
    triggersChanged: () => p.clock.reload(),
    migrationTag: (accountId, name) => p.durableObjects.migrationTag(accountId, name),
    observability: {
      get: (accountId, name) => p.logs.settingOf(accountId, name),
      set: (accountId, name, setting) => p.logs.configure(accountId, name, setting),
    },
    workersDev: {
      enabled: (name) => routing.table.atWorkersDomain(name),
      set: async (accountId, name, enabled) => {
        await routing.store.setWorkersDev(accountId, name, enabled);
        await routing.table.reload();
      },
    },
  });
}
