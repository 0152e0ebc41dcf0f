import type { AnyCommand, CommandAlias } from "../core/cli/command.js";

export { serveOptions } from "./config.js";

/** The edge has no commands of its own yet: its options (the hostname plan) belong to `edgecli serve`. */
export const groups: Record<string, string> = {};
export const commands: AnyCommand[] = [];
export const aliases: CommandAlias[] = [];
