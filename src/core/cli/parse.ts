import { UsageError } from "../errors.js";
import { GLOBAL_OPTIONS, type AnyCommand, type OptionSpec } from "./command.js";

export interface Parsed {
  values: Record<string, unknown>;
  given: Set<string>;
}

function coerce(name: string, spec: OptionSpec, raw: string): unknown {
  switch (spec.type) {
    case "number": {
      const n = Number(raw);
      if (raw.trim() === "" || !Number.isFinite(n)) throw new UsageError(`Invalid value for --${name}: "${raw}" is not a number`);
      return n;
    }
    case "boolean":
      if (raw === "true") return true;
      if (raw === "false") return false;
      throw new UsageError(`Invalid value for --${name}: expected true or false, got "${raw}"`);
    default:
      if (spec.choices && !spec.choices.includes(raw)) {
        throw new UsageError(`Invalid value for --${name}: "${raw}". Choices: ${spec.choices.join(", ")}`);
      }
      return raw;
  }
}

/** Parses the words after the command path against the command's declared options and positionals. */
export function parseArgs(cmd: AnyCommand, words: readonly string[]): Parsed {
  // A Map, so `--constructor` or `--__proto__` is an unknown argument, not a property of every object.
  const specs = new Map<string, OptionSpec>(Object.entries({ ...GLOBAL_OPTIONS, ...(cmd.options ?? {}) }));
  const byAlias = new Map<string, string>();
  for (const [name, s] of specs) if (s.alias) byAlias.set(s.alias, name);
  const values: Record<string, unknown> = {};
  const given = new Set<string>();
  const positionals: string[] = [];

  const set = (name: string, spec: OptionSpec, v: unknown) => {
    given.add(name);
    if (spec.type === "strings") values[name] = [...((values[name] as string[]) ?? []), v as string];
    else values[name] = v;
  };

  for (let i = 0; i < words.length; i++) {
    const w = words[i];
    if (w === "--") {
      positionals.push(...words.slice(i + 1));
      break;
    }
    if (!w.startsWith("-") || w === "-" || /^-\d/.test(w)) {
      positionals.push(w);
      continue;
    }
    const eq = w.indexOf("=");
    let name = w.startsWith("--") ? w.slice(2, eq > 0 ? eq : undefined) : (byAlias.get(w.slice(1, eq > 0 ? eq : undefined)) ?? w.slice(1));
    let inline = eq > 0 ? w.slice(eq + 1) : undefined;
    let spec = specs.get(name);
    if (!spec && name.startsWith("no-") && specs.get(name.slice(3))?.type === "boolean") {
      name = name.slice(3);
      spec = specs.get(name);
      inline = "false";
    }
    if (!spec) throw new UsageError(`Unknown argument: ${name}`);
    if (spec.type === "boolean") {
      if (inline !== undefined) set(name, spec, coerce(name, spec, inline));
      else if (words[i + 1] === "true" || words[i + 1] === "false") set(name, spec, coerce(name, spec, words[++i]));
      else set(name, spec, true);
      continue;
    }
    if (inline === undefined) {
      if (i + 1 >= words.length) throw new UsageError(`Missing value for --${name}`);
      inline = words[++i];
    }
    set(name, spec, coerce(name, spec, inline));
  }

  for (const [name, s] of specs) {
    if (!given.has(name) && s.default !== undefined) values[name] = s.default;
  }

  if (values.help) return { values, given };
  const pos = cmd.positionals ?? [];
  const required = pos.filter((p) => p.required).length;
  if (positionals.length < required) {
    throw new UsageError(
      `Not enough non-option arguments: got ${positionals.length}, need at least ${required} (${pos
        .filter((p) => p.required)
        .map((p) => `<${p.name}>`)
        .join(" ")})`,
    );
  }
  if (positionals.length > pos.length) {
    throw new UsageError(`Unknown arguments: ${positionals.slice(pos.length).join(", ")}`);
  }
  pos.forEach((p, i) => {
    values[p.name] = positionals[i];
  });
  return { values, given };
}
