import { defineCommand } from "../core/cli/command.js";

export const deployCommand = defineCommand({
  path: ["deploy"],
  describe: "Bundle the Worker named in the config (`main`) with esbuild and deploy it with its bindings",
  positionals: [{ name: "script", describe: "Entry point (default: `main` in the config)" }],
  options: {
    name: { type: "string", describe: "Name of the Worker (default: `name` in the config)" },
    env: { type: "string", alias: "e", describe: "Environment of the config to use ([env.<name>])" },
    "compatibility-date": { type: "string", describe: "Date of the runtime behaviour to use (default: `compatibility_date` in the config)" },
    "dry-run": { type: "boolean", describe: "Bundle and check, but do not upload" },
  },
  examples: ["edgecli deploy", "edgecli deploy --env staging"],
  async handler(args, ctx) {
    const { deploy } = await import("./cli/deploy.js");
    return deploy(ctx, args);
  },
});
