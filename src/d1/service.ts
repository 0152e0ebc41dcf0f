import { join } from "node:path";
import { d1BindingOperation, d1OperationMetrics } from "./metrics.js";
import type { EdgeService, ServiceContext } from "../core/service.js";
import { createD1BindingHandler, type D1BindingHandler } from "./binding.js";
import { readD1Config, serveOptions } from "./config.js";
import { D1Databases } from "./databases.js";
import { D1_DIR, D1Engine } from "./engine/engine.js";
import { D1Errors } from "./errors.js";
import { D1_MIGRATIONS } from "./sqlite-migrations.js";
import { SqliteD1Store } from "./sqlite-store.js";
import { D1Transfers } from "./transfers.js";

export interface D1Service extends EdgeService {
  /** Serves workerd's D1 binding protocol; mounted by the workers service behind its loopback server. */
  readonly bindingHandler: D1BindingHandler;
  /** Whether `uuid` is a database of `accountId` (a worker's binding must name one). */
  databaseExists(accountId: string, uuid: string): Promise<boolean>;
}

/**
 * D1: the registry of databases (db/d1.sqlite) and their files (<state>/d1/). On PostgreSQL (distributed mode) the
 * files would live on one node only, so D1 is refused there, whole and clearly (D1Errors.distributed), until it has
 * a store every node can reach.
 */
export function createD1Service(ctx: ServiceContext): D1Service {
  if (ctx.postgres) return distributedD1();
  const config = readD1Config(ctx.options(serveOptions));
  const log = ctx.log.child({ service: "d1" });
  const store = new SqliteD1Store(ctx.openDb("d1", D1_MIGRATIONS), { databasesPerAccount: config.databasesPerAccount });
  const dir = join(ctx.config.stateDir, D1_DIR);
  const engine = new D1Engine(dir, config.queryTimeoutMs, log, config);
  const databases = new D1Databases(store, engine);
  const transfers = new D1Transfers(join(ctx.config.stateDir, "d1-transfers"));
  const metrics = ctx.metrics && d1OperationMetrics(ctx.metrics);
  const d1Binding = createD1BindingHandler(databases, log);
  return {
    name: "d1",
    bindingHandler: (target, req, res) => {
      metrics?.track(d1BindingOperation(req), "binding", req, res);
      d1Binding(target, req, res);
    },
    databaseExists: async (accountId, uuid) => (await store.getDatabase(accountId, uuid)) !== undefined,
    async registerApi(app) {
      const { registerD1Routes } = await import("./routes.js");
      registerD1Routes(app, { databases, transfers, dir, transferUrl: (token) => `${ctx.edgeUrl()}/d1-transfers/${token}`, metrics });
    },
    async registerPublic(app) {
      const { registerD1TransferRoutes } = await import("./routes.js");
      registerD1TransferRoutes(app, transfers);
    },
    async stop() {
      await engine.stop();
      transfers.close();
    },
  };
}

/** D1 on a platform running on PostgreSQL: every way in answers D1Errors.distributed. */
function distributedD1(): D1Service {
  return {
    name: "d1",
    bindingHandler: (_target, req, res) => {
      req.resume();
      const e = D1Errors.distributed();
      res.writeHead(e.status, { "content-type": "application/json" }).end(JSON.stringify({ success: false, error: e.message }));
    },
    databaseExists: () => Promise.reject(D1Errors.distributed()),
    registerApi(app) {
      app.all("/accounts/:account_id/d1/*", { config: { permission: "d1_read" } }, async () => {
        throw D1Errors.distributed();
      });
      app.all("/accounts/:account_id/d1", { config: { permission: "d1_read" } }, async () => {
        throw D1Errors.distributed();
      });
    },
  };
}
