import { defineCommand, type OptionSpec } from "../core/cli/command.js";

const target = {
  name: { type: "string", describe: "Name of the Worker (default: `name` in the config)" },
  env: { type: "string", alias: "e", describe: "Environment of the config to use ([env.<name>])" },
} as const satisfies Record<string, OptionSpec>;

const secretPositional = [{ name: "key", describe: "The variable name the secret is bound to on `env`", required: true }] as const;

export const secretCommands = [
  defineCommand({
    path: ["secret", "put"],
    describe: "Create or replace a secret of a Worker (hidden prompt on a terminal, else read from stdin)",
    positionals: secretPositional,
    options: target,
    examples: ["edgecli secret put AUTH_KEY_SECRET", 'printf %s "$VALUE" | edgecli secret put AUTH_KEY_SECRET --name my-worker'],
    async handler(args, ctx) {
      const { secretPut } = await import("./cli/secret.js");
      return secretPut(ctx, args.key!, args);
    },
  }),
  defineCommand({
    path: ["secret", "list"],
    describe: "List the names of a Worker's secrets (never their values)",
    options: { ...target, format: { type: "string", describe: "Output format", choices: ["json", "pretty"], default: "json" } },
    async handler(args, ctx) {
      const { secretList } = await import("./cli/secret.js");
      return secretList(ctx, args);
    },
  }),
  defineCommand({
    path: ["secret", "delete"],
    describe: "Delete a secret of a Worker",
    positionals: secretPositional,
    options: target,
    async handler(args, ctx) {
      const { secretDelete } = await import("./cli/secret.js");
      return secretDelete(ctx, args.key!, args);
    },
  }),
];
