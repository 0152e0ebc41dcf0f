import type { OptionSpec, OptionValues } from "./command.js";

/** Whether `value` is of the type `spec` declares (and one of its choices, when it has them). */
export function hasOptionType(spec: OptionSpec, value: unknown): boolean {
  if (spec.type === "strings") return Array.isArray(value) && value.every((x) => typeof x === "string");
  if (typeof value !== spec.type) return false;
  return !spec.choices || spec.choices.includes(value as string);
}

/** What `value` must be, for messages: "a number", "an array of strings", "one of: a, b". */
export function optionTypeName(spec: OptionSpec): string {
  if (spec.type === "strings") return "an array of strings";
  if (spec.choices) return `one of: ${spec.choices.join(", ")}`;
  return `a ${spec.type}`;
}

/**
 * The values of the options `spec` declares, out of every serve option merged (flags, the platform config file,
 * defaults), typed by `spec`. This is the one place the merged values are cast to their types; each is checked
 * against its spec first (flags and the file were checked already, so a mismatch here is a bug, reported as one).
 * A value that is absent takes the spec's default.
 */
export function optionValues<S extends Record<string, OptionSpec>>(merged: ReadonlyMap<string, unknown>, spec: S): OptionValues<S> {
  const out: Record<string, unknown> = {};
  for (const [name, s] of Object.entries(spec)) {
    const value = merged.get(name) ?? s.default;
    if (value !== undefined && !hasOptionType(s, value)) throw new Error(`serve option --${name} is ${JSON.stringify(value)}, not ${optionTypeName(s)}`);
    out[name] = value;
  }
  return out as OptionValues<S>;
}
