import { defineCommand, type AnyCommand, type CommandAlias, type OptionSpec } from "../core/cli/command.js";
import { lazy } from "../core/cli/lazy.js";

export { serveOptions } from "./config.js";

/** What each of this area's command groups is for, shown by `edgecli <group> --help`. */
export const groups: Record<string, string> = {
  secret: "Manage the secrets of the Worker named in the config",
};

/** The Worker a command acts on: `--name`, else the config's `name` (for `--env`). */
const target = {
  name: { type: "string", describe: "Name of the Worker (default: `name` in the config)" },
  env: { type: "string", alias: "e", describe: "Environment of the config to use ([env.<name>])" },
} as const satisfies Record<string, OptionSpec>;

const secretKey = [{ name: "key", describe: "The variable name the secret is bound to on `env`", required: true }] as const;

export const commands: AnyCommand[] = [
  defineCommand({
    path: ["secret", "put"],
    describe: "Create or replace a secret of a Worker (hidden prompt on a terminal, else read from stdin)",
    positionals: secretKey,
    options: target,
    examples: ["edgecli secret put AUTH_KEY_SECRET", 'printf %s "$VALUE" | edgecli secret put AUTH_KEY_SECRET --name my-worker'],
    handler: lazy(() => import("./cli/secret.js"), "putSecret"),
  }),
  defineCommand({
    path: ["secret", "list"],
    describe: "List the names of a Worker's secrets (never their values)",
    options: { ...target, format: { type: "string", describe: "Output format", choices: ["json", "pretty"], default: "json" } },
    handler: lazy(() => import("./cli/secret.js"), "listSecrets"),
  }),
  defineCommand({
    path: ["secret", "delete"],
    describe: "Delete a secret of a Worker (asks first; without a terminal, refuses unless --force)",
    positionals: secretKey,
    options: { ...target, force: { type: "boolean", alias: "y", describe: "Do not ask (needed without a terminal)" } },
    handler: lazy(() => import("./cli/secret.js"), "deleteSecret"),
  }),
  defineCommand({
    path: ["deploy"],
    describe:
      "Bundle the Worker named in the config (`main`) with esbuild and deploy it with its bindings (and its [assets] directory, uploaded first); a config with [assets] and no `main` deploys an assets-only Worker",
    positionals: [{ name: "script", describe: "Entry point (default: `main` in the config)" }],
    options: {
      ...target,
      "compatibility-date": { type: "string", describe: "Date of the runtime behaviour to use (default: `compatibility_date` in the config)" },
      "dry-run": { type: "boolean", describe: "Bundle and check, but do not upload" },
      triggers: {
        type: "strings",
        describe: "Cron schedule to attach (repeatable; default: `[triggers] crons` in the config; without either, the Worker's triggers are kept)",
      },
    },
    examples: ["edgecli deploy", "edgecli deploy --env staging", 'edgecli deploy --triggers "*/5 * * * *" --triggers "0 0 * * *"'],
    handler: lazy(() => import("./cli/deploy.js"), "deploy"),
  }),
  defineCommand({
    path: ["tail"],
    describe: "Stream a Worker's live logs: console output, uncaught exceptions and one summary per request (Ctrl-C stops)",
    positionals: [{ name: "script", describe: "Name of the Worker (default: --name, else `name` in the config)" }],
    options: {
      ...target,
      format: { type: "string", describe: "Output format (default: pretty on a terminal, else json: one event per line)", choices: ["json", "pretty"] },
      status: { type: "strings", describe: "Only invocations with this outcome: ok, error or canceled (repeatable)" },
      method: { type: "strings", describe: "Only requests with this HTTP method (repeatable)" },
      search: { type: "string", describe: "Only invocations whose console output or exceptions contain this text" },
      header: { type: "string", describe: "Only requests with this header (`name`, or `name: text` for a value containing text)" },
      ip: { type: "strings", describe: "Only requests from this client address (`self`: yours; repeatable)" },
    },
    examples: ["edgecli tail my-worker", "edgecli tail --status error --format json", "edgecli tail my-worker --method POST --search checkout"],
    handler: lazy(() => import("./tail/cli.js"), "tail"),
  }),
];

/** Deprecated spellings of this area's command groups: none. */
export const aliases: CommandAlias[] = [];
