import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { CliContext } from "../../cli/context.js";
import type { OptionSpec } from "../../cli/command.js";
import { hasOptionType, optionTypeName, optionValues } from "../../cli/option-values.js";
import { BACKEND_ENV, readCoreConfig, serveOptions as coreServeOptions } from "../../config.js";
import { SECRETS_KEY_ENV } from "../../secret-box.js";
import { UserError } from "../../errors.js";
import type { PlatformConfig } from "../../service.js";
import { resolveStateDir } from "../../state-dir.js";
import type { PlatformRunner } from "../commands.js";

/** `edgecli serve`: resolves the config (flags over the platform config file over defaults) and runs the platform. */
export async function serve(
  args: Record<string, unknown> & { given: ReadonlySet<string> },
  ctx: CliContext,
  specs: Readonly<Record<string, OptionSpec>>,
  run: PlatformRunner,
): Promise<number> {
  return run(await resolvePlatformConfig(args, args.given, specs, ctx.env, ctx.cwd));
}

/** Merges flags over the platform config file over defaults. Keys of the file are the long option names. */
export async function resolvePlatformConfig(
  values: Readonly<Record<string, unknown>>,
  given: ReadonlySet<string>,
  specs: Readonly<Record<string, OptionSpec>>,
  env: NodeJS.ProcessEnv,
  cwd: string,
): Promise<PlatformConfig> {
  // A Map: keys of the file are a user's names, never properties of a plain object.
  const merged = new Map<string, unknown>(Object.entries(values).filter(([k]) => Object.hasOwn(specs, k)));
  const flags = optionValues(merged, coreServeOptions);
  const stateDir = resolveStateDir(flags["state-dir"], env, cwd);
  const explicit = flags["platform-config"];
  const file = explicit ?? (existsSync(join(stateDir, "platform.toml")) ? join(stateDir, "platform.toml") : undefined);
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
      if (!hasOptionType(spec, v)) throw new UserError(`${file}: "${k}" must be ${optionTypeName(spec)}`);
      if (!given.has(k)) merged.set(k, v);
    }
  }
  // The backend variables override platform.toml (a node's environment says where its shared state is), not flags.
  for (const [option, variable] of Object.entries(BACKEND_ENV)) {
    const value = env[variable];
    if (value && !given.has(option)) merged.set(option, value);
  }
  const core = readCoreConfig(optionValues(merged, coreServeOptions));
  if (core.databaseUrl && !env[SECRETS_KEY_ENV]) {
    throw new UserError(
      `With --database-url, set ${SECRETS_KEY_ENV} (base64 of 32 random bytes, e.g. openssl rand -base64 32) to the same value on every node: worker secrets are sealed with it, and a key file in one node's state directory would not open them on another.`,
    );
  }
  return { stateDir, core, options: merged };
}
