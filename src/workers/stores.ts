import type { SecretBox } from "../core/secret-box.js";
import type { ServiceContext } from "../core/service.js";
import { ASSETS_PG_MIGRATIONS } from "./assets/pg-migrations.js";
import { ASSETS_AREA, PgAssetsStore } from "./assets/pg-store.js";
import { ASSETS_MIGRATIONS } from "./assets/sqlite-migrations.js";
import { SqliteAssetsStore } from "./assets/sqlite-store.js";
import type { AssetsStore } from "./assets/store.js";
import { DURABLE_OBJECTS_MIGRATIONS } from "./durable-objects/sqlite-migrations.js";
import { SqliteDurableObjectsStore } from "./durable-objects/sqlite-store.js";
import { LOGS_PG_MIGRATIONS } from "./logs/pg-migrations.js";
import { LOGS_AREA, PgLogsStore } from "./logs/pg-store.js";
import { LOGS_MIGRATIONS } from "./logs/sqlite-migrations.js";
import { SqliteLogsStore } from "./logs/sqlite-store.js";
import type { LogsStore } from "./logs/store.js";
import { WORKERS_PG_MIGRATIONS } from "./pg-migrations.js";
import { PgWorkersStore, WORKERS_AREA } from "./pg-store.js";
import { ROUTES_PG_MIGRATIONS } from "./routing/pg-migrations.js";
import { PgRoutesStore, ROUTES_AREA } from "./routing/pg-store.js";
import { ROUTES_MIGRATIONS } from "./routing/sqlite-migrations.js";
import { SqliteRoutesStore } from "./routing/sqlite-store.js";
import type { RoutesStore } from "./routing/store.js";
import { SqliteWorkersStore } from "./sqlite-store.js";
import { WORKERS_MIGRATIONS } from "./sqlite-migrations.js";
import type { WorkersStore } from "./store.js";

/** The stores of the workers area's features, each on PostgreSQL when the platform runs on it, else in SQLite. */
export interface WorkersStores {
  scripts: WorkersStore;
  /** The scripts' store on PostgreSQL, whose key is checked at start (the secrets it holds). */
  pgScripts?: PgWorkersStore;
  assets: AssetsStore;
  /** Routes and Custom Domains. */
  routes: RoutesStore;
  /**
   * None on several nodes (--database-url): an object must have one instance cluster-wide, which nothing provides
   * yet, so uploads that use Durable Objects are refused (DurableObjectsErrors.distributed).
   */
  durableObjects?: SqliteDurableObjectsStore;
  /** Workers Logs: settings and kept events. */
  logs: LogsStore;
}

export function openWorkersStores(ctx: ServiceContext, box: SecretBox): WorkersStores {
  const pg = ctx.openPostgres(WORKERS_AREA, WORKERS_PG_MIGRATIONS);
  const pgScripts = pg && new PgWorkersStore(pg, ctx.content("workers"), box, ctx.bus);
  const scripts = pgScripts ?? new SqliteWorkersStore(ctx.openDb("workers", WORKERS_MIGRATIONS), ctx.content("workers"), box);
  const assetsPg = ctx.openPostgres(ASSETS_AREA, ASSETS_PG_MIGRATIONS);
  const assets = assetsPg
    ? new PgAssetsStore(assetsPg, ctx.content("worker-assets"))
    : new SqliteAssetsStore(ctx.openDb("worker-assets", ASSETS_MIGRATIONS), ctx.content("worker-assets"));
  const routesPg = ctx.openPostgres(ROUTES_AREA, ROUTES_PG_MIGRATIONS);
  const routes = routesPg ? new PgRoutesStore(routesPg, ctx.bus) : new SqliteRoutesStore(ctx.openDb("worker-routes", ROUTES_MIGRATIONS));
  const durableObjects = ctx.postgres ? undefined : new SqliteDurableObjectsStore(ctx.openDb("durable-objects", DURABLE_OBJECTS_MIGRATIONS));
  const logsPg = ctx.openPostgres(LOGS_AREA, LOGS_PG_MIGRATIONS);
  const logs = logsPg ? new PgLogsStore(logsPg) : new SqliteLogsStore(ctx.openDb("workers-logs", LOGS_MIGRATIONS));
  return { scripts, pgScripts, assets, routes, durableObjects, logs };
}
