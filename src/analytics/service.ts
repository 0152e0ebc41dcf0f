import type { EdgeService, ServiceContext } from "../core/service.js";
import type { AnalyticsDataset } from "./dataset.js";
import { registerAnalyticsRoutes } from "./routes.js";
import { AnalyticsSchema } from "./schema.js";

// The port the areas fill in (R2 its storage dataset); they import it from here, the one file of an area others may
// import (docs/ARCHITECTURE.md, "Who may import whom").
export type { AnalyticsDataset } from "./dataset.js";

/** The GraphQL Analytics API over the datasets the areas hand over (platform.ts wires them: R2's storage dataset). */
export function createAnalyticsService(ctx: ServiceContext, datasets: readonly AnalyticsDataset[]): EdgeService {
  const schema = new AnalyticsSchema(datasets, (err, path) => ctx.log.error({ err, path }, "analytics dataset failed"));
  return { name: "analytics", registerApi: (app) => registerAnalyticsRoutes(app, schema) };
}
