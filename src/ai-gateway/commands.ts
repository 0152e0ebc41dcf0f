import type { AnyCommand, CommandAlias, OptionSpec } from "../core/cli/command.js";

/** This area's CLI commands (declared as data; handlers import their heavy parts lazily). */
export const commands: AnyCommand[] = [];
/** Deprecated spellings of this area's command groups. */
export const aliases: CommandAlias[] = [];
/** Options this area adds to `edgecli serve`. */
export const serveOptions: Record<string, OptionSpec> = {};
