import type { AnyCommand, CommandAlias } from "../core/cli/command.js";

export { serveOptions } from "./config.js";

/** The edge has no CLI commands of its own yet: zone settings are an API (docs/proxy.md). */
export const groups: Record<string, string> = {};
export const commands: AnyCommand[] = [];
export const aliases: CommandAlias[] = [];
