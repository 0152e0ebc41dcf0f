import type { AnyCommand, CliArea, CommandAlias } from "./core/cli/command.js";
import { registerDeploySections } from "./core/cli/deploy-sections.js";
import * as identity from "./core/auth/commands.js";
import { serveCommand } from "./core/server/commands.js";
import * as d1 from "./d1/commands.js";
import * as state from "./core/state-copy/commands.js";
import * as dns from "./dns/commands.js";
import * as kv from "./kv/commands.js";
import * as queues from "./queues/commands.js";
import * as r2 from "./r2/commands.js";
import * as workers from "./workers/commands.js";
import * as aiGateway from "./ai-gateway/commands.js";
import * as edge from "./edge/commands.js";

/** Every area's CLI, in the order `edgecli --help` lists them. Each declares its own commands, groups and options. */
const areas: readonly CliArea[] = [identity, edge, dns, kv, r2, d1, queues, workers, aiGateway];

export const commands: AnyCommand[] = [
  serveCommand(Object.assign({}, ...areas.map((a) => a.serveOptions)), async () => (await import("./platform.js")).runPlatformUntilSignal),
  ...areas.flatMap((a) => a.commands),
  ...state.stateCommands(async () => {
    const { AREA_COPIERS, NODE_ONLY_STATE } = await import("./state-copiers.js");
    return { copiers: AREA_COPIERS, nodeOnly: NODE_ONLY_STATE };
  }),
];

// What other areas read of a config when `edgecli deploy` (workers) runs: Queues' producers and consumers.
registerDeploySections(areas.flatMap((a) => a.deploySections ?? []));

export const aliases: CommandAlias[] = areas.flatMap((a) => a.aliases);

export const groups: Record<string, string> = Object.assign({}, ...areas.map((a) => a.groups), state.groups);
