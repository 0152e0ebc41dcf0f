import { defineCommand, type AnyCommand, type CommandAlias } from "../cli/command.js";
import { lazy } from "../cli/lazy.js";

/** Identity's part of the CLI: who the credentials are. */
export const groups: Record<string, string> = {};

export const commands: AnyCommand[] = [
  defineCommand({
    path: ["whoami"],
    describe: "Show the user, the accounts and the permissions of the current credentials",
    options: { json: { type: "boolean", describe: "Print as JSON" } },
    handler: lazy(() => import("./cli/whoami.js"), "whoami"),
  }),
];

export const aliases: CommandAlias[] = [];

/** Identity adds no options to `edgecli serve`. */
export const serveOptions = {};
