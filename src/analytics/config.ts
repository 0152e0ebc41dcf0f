import type { OptionSpec, OptionValues } from "../core/cli/command.js";
import { UserError } from "../core/errors.js";

export const serveOptions = {
  "analytics-retention-days": {
    type: "number",
    describe: "Days the GraphQL Analytics API's per-minute rollups are kept (older minutes are deleted hourly)",
    // What the hosted adaptive datasets keep on paid plans.
    default: 31,
  },
} satisfies Record<string, OptionSpec>;

export interface AnalyticsConfig {
  retentionSeconds: number;
}

export function readAnalyticsConfig(options: OptionValues<typeof serveOptions>): AnalyticsConfig {
  const days = options["analytics-retention-days"];
  if (!Number.isInteger(days) || days < 1 || days > 3650)
    throw new UserError(`--analytics-retention-days must be a whole number of days from 1 to 3650; got ${days}`);
  return { retentionSeconds: days * 86_400 };
}
