import type { OptionSpec, OptionValues } from "../core/cli/command.js";
import { defaultWorkerdPath } from "./runtime/workerd-binary.js";

/** What Workers adds to `edgecli serve` (defaults live only here). */
export const serveOptions = {
  "workers-domain": {
    type: "string",
    describe: "Worker scripts are served on the edge port at <script>.<this domain>",
    default: "workers.localhost",
  },
  "workerd-binary": {
    type: "string",
    describe: "The workerd executable that runs worker scripts (default: the one of the pinned npm package workerd)",
  },
} satisfies Record<string, OptionSpec>;

export interface WorkersConfig {
  /** The domain scripts are served under, lower case, without leading or trailing dots. */
  domain: string;
  /** The workerd executable that runs every script. */
  workerdPath: string;
}

export function readWorkersConfig(options: OptionValues<typeof serveOptions>): WorkersConfig {
  return {
    domain: options["workers-domain"].toLowerCase().replace(/^\.+|\.+$/g, ""),
    // Not a default of the option: the pinned package's binary is found where npm installed it.
    workerdPath: options["workerd-binary"] ?? defaultWorkerdPath(),
  };
}
