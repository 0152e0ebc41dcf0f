import type { AnyCommand, OptionSpec } from "../cli/command.js";
import { defineCommand } from "../cli/command.js";
import { serveOptions as coreServeOptions } from "../config.js";
import type { PlatformConfig } from "../service.js";

/** Runs the platform with a resolved config until it is told to stop; returns the exit code. */
export type PlatformRunner = (config: PlatformConfig) => Promise<number>;

/**
 * `edgecli serve`, with the options of every area merged in. `run` is the composition root (src/platform.ts),
 * handed in by src/commands.ts: core does not know the areas it starts.
 */
export function serveCommand(areaOptions: Readonly<Record<string, OptionSpec>>, run: () => Promise<PlatformRunner>): AnyCommand {
  const options = { ...coreServeOptions, ...areaOptions };
  return defineCommand({
    path: ["serve"],
    describe: "Start the platform in the foreground: the v4 API, the AI gateway, workers and the DNS server",
    options,
    examples: ["edgecli serve", "edgecli serve --port 8787 --state-dir /var/lib/edge --dns-port 53"],
    epilogue:
      "Worker secrets are sealed with the key in EDGE_SECRETS_KEY (base64 of 32 random bytes) when it is set, otherwise with <state-dir>/keys/secrets.key, made on the first start.",
    handler: async (args, ctx) => (await import("./cli/serve.js")).serve(args, ctx, options, await run()),
  });
}
