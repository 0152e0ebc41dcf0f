import { GLOBAL_OPTIONS, type AnyCommand, type OptionSpec } from "./command.js";

function optionLines(opts: Record<string, OptionSpec>): string[] {
  const rows = Object.entries(opts)
    .filter(([, s]) => !s.hidden)
    .map(([name, s]) => {
      const flag = `${s.alias ? `-${s.alias}, ` : "    "}--${name}`;
      const extra: string[] = [s.type === "strings" ? "string, repeatable" : s.type];
      if (s.choices) extra.push(`choices: ${s.choices.join(", ")}`);
      if (s.default !== undefined) extra.push(`default: ${JSON.stringify(s.default)}`);
      return [flag, `${s.describe}  [${extra.join("] [")}]`] as const;
    });
  const w = Math.max(0, ...rows.map((r) => r[0].length));
  return rows.map(([f, d]) => `  ${f.padEnd(w)}  ${d}`);
}

export function commandUsage(cmd: AnyCommand): string {
  const pos = (cmd.positionals ?? []).map((p) => (p.required ? `<${p.name}>` : `[${p.name}]`)).join(" ");
  return `edgecli ${cmd.path.join(" ")}${pos ? ` ${pos}` : ""}${cmd.options && Object.keys(cmd.options).length ? " [OPTIONS]" : ""}`;
}

export function commandHelp(cmd: AnyCommand): string {
  const out = [commandUsage(cmd), "", cmd.describe, ""];
  if (cmd.positionals?.length) {
    out.push("POSITIONALS");
    const w = Math.max(...cmd.positionals.map((p) => p.name.length));
    for (const p of cmd.positionals) out.push(`  ${p.name.padEnd(w)}  ${p.describe}${p.required ? "  [required]" : ""}`);
    out.push("");
  }
  if (cmd.options && Object.keys(cmd.options).length) {
    out.push("OPTIONS", ...optionLines(cmd.options), "");
  }
  out.push("GLOBAL FLAGS", ...optionLines(GLOBAL_OPTIONS), "");
  if (cmd.examples?.length) out.push("EXAMPLES", ...cmd.examples.map((e) => `  ${e}`), "");
  if (cmd.epilogue) out.push(cmd.epilogue, "");
  return out.join("\n");
}

/** Help for a group of commands (e.g. `edgecli kv`), listing what lies beneath it. */
export function groupHelp(prefix: readonly string[], commands: readonly AnyCommand[], groups: Readonly<Record<string, string>> = {}): string {
  const below = commands.filter((c) => !c.hidden && prefix.every((w, i) => c.path[i] === w) && c.path.length > prefix.length);
  const rows = new Map<string, string>();
  for (const c of below) {
    const next = c.path.slice(0, prefix.length + 1).join(" ");
    if (!rows.has(next)) rows.set(next, c.path.length === prefix.length + 1 ? c.describe : (groups[next] ?? `${c.path[prefix.length]} commands`));
  }
  const w = Math.max(0, ...[...rows.keys()].map((k) => k.length + 8));
  const title = prefix.length ? `edgecli ${prefix.join(" ")}` : "edgecli";
  const describe = prefix.length ? groups[prefix.join(" ")] : "A self-hosted edge platform: v4 API, AI gateway, DNS, KV, R2 and Workers";
  return [
    `${title} <command>`,
    "",
    ...(describe ? [describe, ""] : []),
    "COMMANDS",
    ...[...rows].map(([k, d]) => `  ${`edgecli ${k}`.padEnd(w)}  ${d}`),
    "",
    "GLOBAL FLAGS",
    ...optionLines(GLOBAL_OPTIONS),
    "",
    `Run "${title} <command> --help" for the options of a command.`,
    "",
  ].join("\n");
}
