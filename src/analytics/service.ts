import type { EdgeService, ServiceContext } from "../core/service.js";
import { readAnalyticsConfig, serveOptions } from "./config.js";
import type { AnalyticsDataset, Rollups } from "./dataset.js";
import { ROLLUP_PG_MIGRATIONS } from "./rollups/pg-migrations.js";
import { ANALYTICS_AREA, PgRollupStore } from "./rollups/pg-store.js";
import { RollupRecorder } from "./rollups/recorder.js";
import { ROLLUP_MIGRATIONS } from "./rollups/sqlite-migrations.js";
import { SqliteRollupStore } from "./rollups/sqlite-store.js";
import { groupedDataset, type GroupedDatasetSpec } from "./grouped-dataset.js";
import { registerAnalyticsRoutes } from "./routes.js";
import type { AnalyticsSchema } from "./schema.js";

// The ports the areas fill in (R2 its storage dataset, the edge its HTTP traffic); they import them from here, the
// one file of an area others may import (docs/ARCHITECTURE.md, "Who may import whom").
export type { AnalyticsDataset, RequestedFields, Rollups } from "./dataset.js";
export type { RollupGroup, RollupQuery } from "./rollups/store.js";
export { serveOptions } from "./config.js";
export type { GroupedDatasetSpec } from "./grouped-dataset.js";

const PRUNE_EVERY_MS = 3_600_000;

export interface AnalyticsArea extends EdgeService {
  /** The per-minute rollups areas record into and answer their datasets from. */
  readonly rollups: Rollups;
  /** Adds an area's dataset (before the API is registered). */
  addDataset(dataset: AnalyticsDataset): void;
  /** Adds a dataset an area describes (grouped-dataset.ts), answered from the rollups. */
  addGroupedDataset(spec: GroupedDatasetSpec): void;
  /** Deletes the rollups of a zone or account that is gone (a zone of the same name made later starts from none). */
  forgetScope(scope: string): Promise<void>;
}

/**
 * The GraphQL Analytics API over the datasets the areas hand over (platform.ts wires them), and the per-minute rollups
 * they are answered from. `zoneAccount` (DNS's) says whose a zone is, for the zone datasets.
 */
export function createAnalyticsService(ctx: ServiceContext, deps: { zoneAccount: (zoneId: string) => string | undefined }): AnalyticsArea {
  const cfg = readAnalyticsConfig(ctx.options(serveOptions));
  const log = ctx.log.child({ service: "analytics" });
  const pg = ctx.openPostgres(ANALYTICS_AREA, ROLLUP_PG_MIGRATIONS);
  const store = pg ? new PgRollupStore(pg) : new SqliteRollupStore(ctx.openDb("analytics", ROLLUP_MIGRATIONS));
  const recorder = new RollupRecorder(store, ctx.nodeId, log);
  const datasets: AnalyticsDataset[] = [];
  let pruneTimer: NodeJS.Timeout | undefined;
  let warmTimer: NodeJS.Timeout | undefined;
  // graphql-js and the schema built from every dataset are made off the start's path and off any request's: once the
  // start is done, in the background (loading graphql-js took 0.3–1 s on a loaded machine, which the first query,
  // and every request meanwhile, would otherwise wait for). docs/benchmarks.md, "Resident memory at idle".
  let schema: Promise<AnalyticsSchema> | undefined;
  const schemaOf = () =>
    (schema ??= import("./schema.js").then(
      ({ AnalyticsSchema }) => new AnalyticsSchema(datasets, (err, path) => log.error({ err, path }, "analytics dataset failed"), deps.zoneAccount),
    ));
  const prune = () =>
    void store
      .prune(Math.floor(Date.now() / 1000) - cfg.retentionSeconds)
      .then((n) => n > 0 && log.info({ rows: n }, "analytics rollups past retention deleted"))
      .catch((err: unknown) => log.warn({ err }, "analytics rollups not pruned"));
  const rollups: Rollups = {
    record: (dataset, scope, accountId, atMs, dims, sums, count) => recorder.add(dataset, scope, accountId, atMs, dims, sums, count),
    query: (q) => store.query(q),
    retentionSeconds: cfg.retentionSeconds,
  };
  return {
    name: "analytics",
    rollups,
    addDataset: (dataset) => void datasets.push(dataset),
    addGroupedDataset(spec) {
      datasets.push(groupedDataset(spec, rollups));
    },
    forgetScope: (scope) => store.deleteScope(scope),
    registerApi(app) {
      registerAnalyticsRoutes(app, schemaOf);
    },
    async start() {
      recorder.start();
      prune();
      pruneTimer = setInterval(prune, PRUNE_EVERY_MS);
      pruneTimer.unref();
      warmTimer = setTimeout(() => void schemaOf().catch((err: unknown) => log.error({ err }, "analytics schema not built")), 0);
      warmTimer.unref();
    },
    async stop() {
      clearInterval(pruneTimer);
      clearTimeout(warmTimer);
      await recorder.stop();
    },
  };
}
