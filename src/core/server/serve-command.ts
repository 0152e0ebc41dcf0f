import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { UserError } from "../errors.js";
import { defineCommand, type AnyCommand, type OptionSpec } from "../cli/command.js";
import { resolveStateDir } from "../state-dir.js";
import type { PlatformConfig } from "../service.js";

export const CORE_SERVE_OPTIONS = {
  host: { type: "string", describe: "Address of the edge HTTP port (API, AI gateway, workers)", default: "127.0.0.1" },
  port: { type: "number", describe: "Edge HTTP port; 0 picks a free one", default: 8787 },
  "state-dir": { type: "string", describe: "Where the platform keeps its state (env EDGE_STATE_DIR; default .edge/)" },
  "log-level": { type: "string", describe: "Log level", choices: ["fatal", "error", "warn", "info", "debug", "trace", "silent"], default: "info" },
  "body-limit": { type: "number", describe: "Largest JSON request body in bytes (routes with raw bodies set their own)", default: 10 * 1024 * 1024 },
  "platform-config": { type: "string", describe: "TOML file whose keys are these option names (default <state-dir>/platform.toml when present)" },
  "freeze-object-prototype": {
    type: "boolean",
    describe: "Once started, freeze Object.prototype, so a prototype-pollution bug fails its request instead of changing every object (false turns it off)",
    default: true,
  },
} satisfies Record<string, OptionSpec>;

/** Merges flags over the platform config file over defaults. Keys of the file are the long option names. */
export async function resolvePlatformConfig(
  values: Record<string, unknown>,
  given: ReadonlySet<string>,
  specs: Record<string, OptionSpec>,
  env: NodeJS.ProcessEnv,
  cwd: string,
): Promise<PlatformConfig> {
  const stateDir = resolveStateDir(values["state-dir"] as string | undefined, env, cwd);
  const explicit = values["platform-config"] as string | undefined;
  const file = explicit ?? (existsSync(join(stateDir, "platform.toml")) ? join(stateDir, "platform.toml") : undefined);
  const options: Record<string, unknown> = { ...values };
  if (file) {
    if (!existsSync(file)) throw new UserError(`The platform config file ${file} does not exist`);
    const { parse } = await import("smol-toml");
    let doc: Record<string, unknown>;
    try {
      doc = parse(readFileSync(file, "utf8")) as Record<string, unknown>;
    } catch (e) {
      throw new UserError(`${file}: invalid TOML: ${(e as Error).message.split("\n")[0]}`);
    }
    for (const [k, v] of Object.entries(doc)) {
      const spec = Object.hasOwn(specs, k) ? specs[k] : undefined;
      if (!spec) throw new UserError(`${file}: unknown key "${k}" (keys are the options of \`edgecli serve\`)`);
      const okType = spec.type === "strings" ? Array.isArray(v) && v.every((x) => typeof x === "string") : typeof v === spec.type;
      if (!okType) throw new UserError(`${file}: "${k}" must be ${spec.type === "strings" ? "an array of strings" : `a ${spec.type}`}`);
      if (!given.has(k)) options[k] = v;
    }
  }
  return { host: options.host as string, port: options.port as number, stateDir, options };
}

/** `edgecli serve`, with the options of every area merged in. */
export function serveCommand(areaOptions: Record<string, OptionSpec>): AnyCommand {
  const options = { ...CORE_SERVE_OPTIONS, ...areaOptions };
  return defineCommand({
    path: ["serve"],
    describe: "Start the platform in the foreground: the v4 API, the AI gateway, workers and the DNS server",
    options,
    examples: ["edgecli serve", "edgecli serve --port 8787 --state-dir /var/lib/edge --dns-port 53"],
    epilogue:
      "Worker secrets are sealed with the key in EDGE_SECRETS_KEY (base64 of 32 random bytes) when it is set, otherwise with <state-dir>/keys/secrets.key, made on the first start.",
    async handler(args, ctx) {
      const config = await resolvePlatformConfig(args as Record<string, unknown>, args.given, options, ctx.env, ctx.cwd);
      const { runPlatformUntilSignal } = await import("../../platform.js");
      return runPlatformUntilSignal(config);
    },
  });
}
