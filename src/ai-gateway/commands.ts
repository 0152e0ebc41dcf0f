import type { AnyCommand, CommandAlias, OptionSpec } from "../core/cli/command.js";
import { gatewayCommands } from "./cli-commands.js";

/** What each of this area's command groups is for, shown by `edgecli <group> --help`. */
export const groups: Record<string, string> = {
  "ai-gateway": "Manage AI gateways, their tokens and their logs",
  "ai-gateway token": "Create, list and revoke gateway tokens (API tokens with the AI Gateway Run permission)",
};

/** This area's CLI commands (declared as data; handlers import their heavy parts lazily). */
export const commands: AnyCommand[] = gatewayCommands;
/** Deprecated spellings of this area's command groups. */
export const aliases: CommandAlias[] = [];
/** Options this area adds to `edgecli serve`. */
export const serveOptions: Record<string, OptionSpec> = {
  "provider-base-url": {
    type: "strings",
    describe: "Upstream base URL of an AI gateway provider, as <provider>=<url> (repeatable), e.g. openai=http://127.0.0.1:11434/v1",
  },
};
