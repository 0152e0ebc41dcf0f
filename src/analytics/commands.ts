import type { AnyCommand, CommandAlias } from "../core/cli/command.js";
import { serveOptions as analyticsOptions } from "./config.js";

/** The analytics API's options (rollup retention) belong to `edgecli serve`; the API itself is GraphQL, with no commands here. */
export const serveOptions = analyticsOptions;
export const groups: Record<string, string> = {};
export const commands: AnyCommand[] = [];
export const aliases: CommandAlias[] = [];
