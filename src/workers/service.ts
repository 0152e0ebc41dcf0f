import { join } from "node:path";
import { SecretBox } from "../core/secret-box.js";
import type { EdgeService, ServiceContext } from "../core/service.js";
import type { KvService } from "../kv/service.js";
import type { R2Service } from "../r2/service.js";
import { DEFAULT_WORKERS_DOMAIN, serveOptions } from "./commands.js";
import { ScriptDeployer } from "./deployer.js";
import { WorkerProxy } from "./runtime/proxy.js";
import { WorkersRuntime } from "./runtime/runtime.js";
import { WorkersStore, workersMigrations } from "./store.js";
import { defaultWorkerdPath } from "./runtime/workerd-binary.js";

export interface WorkersService extends EdgeService {
  readonly store: WorkersStore;
  readonly runtime: WorkersRuntime;
}

export function createWorkersService(ctx: ServiceContext, deps: { kv: KvService; r2: R2Service }): WorkersService {
  const domain = String(ctx.options(serveOptions)["workers-domain"] ?? DEFAULT_WORKERS_DOMAIN)
    .toLowerCase()
    .replace(/^\.+|\.+$/g, "");
  const store = new WorkersStore(ctx.openDb("workers", workersMigrations), ctx.content("workers"), SecretBox.load(ctx.config.stateDir));
  const log = ctx.log.child({ service: "workers" });
  const runtime = new WorkersRuntime(
    store,
    { r2: (bucket, req, res) => deps.r2.bindingHandler(bucket, req, res), kv: (ns, req, res) => deps.kv.bindingHandler(ns, req, res) },
    join(ctx.config.stateDir, "workers-run"),
    log,
    (ctx.options(serveOptions)["workerd-binary"] as string | undefined) ?? defaultWorkerdPath(),
  );
  const deployer = new ScriptDeployer(store, runtime, {
    bucketExists: (accountId, name) => deps.r2.store.getBucket(accountId, name) !== undefined,
    namespaceExists: (accountId, id) => deps.kv.store.getNamespace(accountId, id) !== undefined,
  });
  const proxy = new WorkerProxy(runtime, domain, log);
  const urlOf = (name: string) => {
    const edge = new URL(ctx.edgeUrl());
    return `http://${name}.${domain}${edge.port ? `:${edge.port}` : ""}`;
  };

  return {
    name: "workers",
    store,
    runtime,
    async registerApi(app) {
      const [{ registerMultipart }, { registerWorkersRoutes }] = await Promise.all([import("../core/http/multipart.js"), import("./api/routes.js")]);
      await registerMultipart(app, { fileSize: 10 * 1024 * 1024, files: 100, fields: 100, fieldSize: 1024 * 1024 });
      registerWorkersRoutes(app, { store, deployer, urlOf, workersDomain: domain, newestCompatibilityDate: () => runtime.workerd?.newestCompatibilityDate });
    },
    handleRaw: (req, res) => proxy.handle(req, res),
    async start() {
      await runtime.start();
      const removed = await store.gcContent();
      if (removed) log.info({ removed }, "removed unreferenced worker module files");
    },
    describe: () => ({ workers: urlOf("<script>") }),
    async stop() {
      await runtime.stop();
    },
  };
}
