import type { CliContext } from "./context.js";

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

type ValueOf<O extends OptionSpec> = O["type"] extends "string"
  ? string
  : O["type"] extends "number"
    ? number
    : O["type"] extends "boolean"
      ? boolean
      : string[];

export type ArgsOf<O extends Record<string, OptionSpec>, P extends readonly PositionalSpec[]> = {
  [K in keyof O]: ValueOf<O[K]> | undefined;
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

/** Options shared by many commands, declared once. */
export const GLOBAL_OPTIONS: Record<string, OptionSpec> = {
  help: { type: "boolean", alias: "h", describe: "Show help" },
  version: { type: "boolean", alias: "v", describe: "Show version number" },
  config: { type: "string", alias: "c", describe: "Path to the .toml configuration file (default: edge.toml, then wrangler.toml)" },
};
