import type { AnyCommand, CommandAlias } from "../core/cli/command.js";

import { serveOptions as hostnameOptions } from "./config.js";
import { certificateServeOptions } from "./certificates/config.js";
import { originServeOptions } from "./origin/config.js";

/** The hostname plan's options, the proxy's and the HTTPS port's. */
export const serveOptions = { ...hostnameOptions, ...originServeOptions, ...certificateServeOptions };

/** The edge has no commands of its own yet: its options (the hostname plan, the proxy) belong to `edgecli serve`; zone settings are an API. */
export const groups: Record<string, string> = {};
export const commands: AnyCommand[] = [];
export const aliases: CommandAlias[] = [];
