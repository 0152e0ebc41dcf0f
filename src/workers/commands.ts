import type { AnyCommand, CommandAlias, OptionSpec } from "../core/cli/command.js";
import { deployCommand } from "./deploy-command.js";
import { secretCommands } from "./secret-commands.js";

export const DEFAULT_WORKERS_DOMAIN = "workers.localhost";

/** What each of this area's command groups is for, shown by `edgecli <group> --help`. */
export const groups: Record<string, string> = {
  secret: "Manage the secrets of the Worker named in the config",
};

/** This area's CLI commands (declared as data; handlers import their heavy parts lazily). */
export const commands: AnyCommand[] = [...secretCommands, deployCommand];
/** Deprecated spellings of this area's command groups. */
export const aliases: CommandAlias[] = [];
/** Options this area adds to `edgecli serve`. */
export const serveOptions: Record<string, OptionSpec> = {
  "workers-domain": {
    type: "string",
    describe: "Worker scripts are served on the edge port at <script>.<this domain>",
    default: DEFAULT_WORKERS_DOMAIN,
  },
  "workerd-binary": {
    type: "string",
    describe: "The workerd executable that runs worker scripts (default: the one of the pinned npm package workerd)",
  },
};
