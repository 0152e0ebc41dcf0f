import type { CliContext } from "./context.js";
import type { DeploySectionEntry } from "./deploy-sections.js";

export type OptionType = "string" | "boolean" | "number" | "strings";

export interface OptionSpec {
  type: OptionType;
  describe: string;
  alias?: string;
  default?: string | number | boolean | string[];
  choices?: readonly string[];
  hidden?: boolean;
}

export interface PositionalSpec {
  name: string;
  describe: string;
  required?: boolean;
}

/** The value one option spec parses to: its choices when they are a literal list, else its type's value. */
export type OptionValue<O extends OptionSpec> = O["type"] extends "string"
  ? O extends { choices: readonly (infer C extends string)[] }
    ? C
    : string
  : O["type"] extends "number"
    ? number
    : O["type"] extends "boolean"
      ? boolean
      : string[];

/**
 * The values of a set of option specs, typed by the specs: an option with a default always has a value, the
 * others may be undefined. Declare specs with `satisfies Record<string, OptionSpec>` (not as a Record type), so
 * each option's type and default stay known:
 *
 *   export const serveOptions = { "dns-port": { type: "number", describe: "...", default: 1053 } } satisfies Record<string, OptionSpec>;
 *   export function readDnsConfig(options: OptionValues<typeof serveOptions>): DnsConfig { options["dns-port"] ... } // a number
 */
export type OptionValues<S extends Record<string, OptionSpec>> = {
  readonly [K in keyof S]: S[K] extends { default: unknown } ? OptionValue<S[K]> : OptionValue<S[K]> | undefined;
};

export type ArgsOf<O extends Record<string, OptionSpec>, P extends readonly PositionalSpec[]> = {
  [K in keyof O]: OptionValue<O[K]> | undefined;
} & { [K in P[number]["name"]]: string | undefined } & { /** options the user typed, by long name */ readonly given: ReadonlySet<string> };

/** A command declared as data: the registry parses, validates and documents it from this alone. */
export interface CommandSpec<
  O extends Record<string, OptionSpec> = Record<string, OptionSpec>,
  P extends readonly PositionalSpec[] = readonly PositionalSpec[],
> {
  /** Words that select it, e.g. ["kv", "key", "put"]. */
  path: readonly string[];
  describe: string;
  positionals?: P;
  options?: O;
  examples?: readonly string[];
  /** Extra help text after the options. */
  epilogue?: string;
  hidden?: boolean;
  /** Returns the exit code (default 0). */
  handler(args: ArgsOf<O, P>, ctx: CliContext): Promise<number | void>;
}

export type AnyCommand = CommandSpec<Record<string, OptionSpec>, readonly PositionalSpec[]>;

/** Identity function that keeps option and positional names typed in the handler. */
export function defineCommand<const O extends Record<string, OptionSpec>, const P extends readonly PositionalSpec[] = readonly []>(
  spec: CommandSpec<O, P>,
): AnyCommand {
  return spec as unknown as AnyCommand;
}

/** A deprecated spelling of a command group, e.g. `kv:namespace` for `kv namespace`. */
export interface CommandAlias {
  from: string;
  to: readonly string[];
  warning: string;
}

/**
 * What an area's `commands.ts` exports; src/commands.ts only concatenates the areas.
 * - `groups`: what each command group is for, by its words (`{ kv: "...", "kv namespace": "..." }`), shown by
 *   `edgecli <group> --help`.
 * - `commands`: the area's commands as data; handlers are `lazy(() => import("./cli/<group>.js"), "<name>")`.
 * - `aliases`: deprecated spellings of its groups.
 * - `serveOptions` (in the area's config.ts, re-exported): what the area adds to `edgecli serve`.
 */
export interface CliArea {
  readonly groups: Readonly<Record<string, string>>;
  readonly commands: readonly AnyCommand[];
  readonly aliases: readonly CommandAlias[];
  readonly serveOptions: Readonly<Record<string, OptionSpec>>;
  /** Sections of a wrangler config the area reads when `edgecli deploy` runs (core/cli/deploy-sections.ts). */
  readonly deploySections?: readonly DeploySectionEntry[];
}

/** Options shared by many commands, declared once. */
export const GLOBAL_OPTIONS: Record<string, OptionSpec> = {
  help: { type: "boolean", alias: "h", describe: "Show help" },
  version: { type: "boolean", alias: "v", describe: "Show version number" },
  config: { type: "string", alias: "c", describe: "Path to the .toml configuration file (default: edge.toml, then wrangler.toml)" },
};
