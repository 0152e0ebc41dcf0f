import type { AnyCommand, CommandAlias } from "./core/cli/command.js";
import { serveCommand } from "./core/server/serve-command.js";
import { whoamiCommand } from "./core/auth/whoami-command.js";
import * as dns from "./dns/commands.js";
import * as kv from "./kv/commands.js";
import * as r2 from "./r2/commands.js";
import * as workers from "./workers/commands.js";
import * as aiGateway from "./ai-gateway/commands.js";

const areas = [dns, kv, r2, workers, aiGateway];

/** Every CLI command, registered in this one place. */
export const commands: AnyCommand[] = [
  serveCommand(Object.assign({}, ...areas.map((a) => a.serveOptions))),
  whoamiCommand,
  ...areas.flatMap((a) => a.commands),
];

export const aliases: CommandAlias[] = areas.flatMap((a) => a.aliases);
