import { existsSync, readFileSync } from "node:fs";
import { EdgeError, UsageError, UserError } from "../errors.js";
import { toCliMessage } from "../errors/render.js";
import type { AnyCommand, CommandAlias } from "./command.js";
import { CliContext, type CliIO } from "./context.js";
import { commandHelp, commandUsage, groupHelp } from "./help.js";
import { parseArgs } from "./parse.js";

/**
 * The package's version, from the nearest package.json above this file that has one (the CLI runs compiled or
 * bundled; dist/bin/package.json only sets the module type).
 */
export function cliVersion(): string {
  for (let dir = new URL(".", import.meta.url); ; dir = new URL("..", dir)) {
    const file = new URL("package.json", dir);
    if (existsSync(file)) {
      const { version } = JSON.parse(readFileSync(file, "utf8")) as { version?: string };
      if (version) return version;
    }
    if (dir.pathname === "/") return "unknown";
  }
}

interface Resolved {
  command?: AnyCommand;
  prefix: string[];
  rest: string[];
}

function resolve(argv: readonly string[], commands: readonly AnyCommand[], aliases: readonly CommandAlias[], io: CliIO): Resolved {
  const words = [...argv];
  const alias = aliases.find((a) => a.from === words[0]);
  if (alias) {
    io.stderr.write(`▲ [WARNING] ${alias.warning}\n\n`);
    words.splice(0, 1, ...alias.to);
  }
  const prefix: string[] = [];
  let best: Resolved = { prefix: [], rest: words };
  for (let i = 0; i < words.length && !words[i].startsWith("-"); i++) {
    prefix.push(words[i]);
    const known = commands.some((c) => prefix.every((w, j) => c.path[j] === w));
    if (!known) break;
    const exact = commands.find((c) => c.path.length === prefix.length && c.path.every((w, j) => w === prefix[j]));
    best = { command: exact, prefix: [...prefix], rest: words.slice(i + 1) };
  }
  return best;
}

/** Runs one CLI invocation and returns its exit code. User errors: one message on stderr, exit 1. */
export async function runCli(
  argv: readonly string[],
  commands: readonly AnyCommand[],
  aliases: readonly CommandAlias[],
  io: CliIO,
  groups: Readonly<Record<string, string>> = {},
): Promise<number> {
  const r = resolve(argv, commands, aliases, io);
  const wantsHelp = r.rest.includes("--help") || r.rest.includes("-h");
  if (!r.command) {
    if (argv.includes("--version") || argv.includes("-v")) {
      io.stdout.write(`${cliVersion()}\n`);
      return 0;
    }
    const unknown = r.rest.find((w) => !w.startsWith("-"));
    io.stdout.write(groupHelp(r.prefix, commands, groups));
    if (unknown && !wantsHelp) {
      io.stderr.write(`✘ [ERROR] Unknown command: ${[...r.prefix, unknown].join(" ")}\n\n`);
      return 1;
    }
    return wantsHelp || argv.length === 0 || r.prefix.length > 0 ? 0 : 1;
  }
  const cmd = r.command;
  let ctx: CliContext | undefined;
  try {
    const parsed = parseArgs(cmd, r.rest);
    if (parsed.values.help) {
      io.stdout.write(commandHelp(cmd));
      return 0;
    }
    if (parsed.values.version) {
      io.stdout.write(`${cliVersion()}\n`);
      return 0;
    }
    ctx = new CliContext(io, parsed.values.config as string | undefined);
    const args = Object.assign(parsed.values, { given: parsed.given });
    const code = await cmd.handler(args as never, ctx);
    return typeof code === "number" ? code : 0;
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr.write(`✘ [ERROR] ${err.message}\n\nUsage: ${commandUsage(cmd)}\nRun "edgecli ${cmd.path.join(" ")} --help" for every option.\n`);
      return 1;
    }
    if (err instanceof UserError) {
      io.stderr.write(`✘ [ERROR] ${err.message.replace(/\n/g, "\n  ")}\n${err.hint ? `\n${err.hint}\n` : ""}\n`);
      return 1;
    }
    // A refusal from a store the command opened itself (--local): the same words the API would answer with.
    if (err instanceof EdgeError) {
      io.stderr.write(`✘ [ERROR] ${toCliMessage(err).replace(/\n/g, "\n  ")}\n\n`);
      return 1;
    }
    io.stderr.write(`✘ [ERROR] ${(err as Error)?.stack ?? String(err)}\n\nThis is a bug in edgecli; please report it with the command you ran.\n`);
    return 1;
  }
}
