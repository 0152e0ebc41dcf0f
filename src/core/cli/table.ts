import type { CliContext } from "./context.js";

/** Prints rows as a plain text table (columns from the first row), as wrangler prints query results. */
export function printTable(ctx: CliContext, rows: Record<string, unknown>[]): void {
  if (rows.length === 0) return;
  const columns = Object.keys(rows[0]!);
  const cell = (v: unknown) => (v === null ? "null" : typeof v === "object" ? JSON.stringify(v) : String(v));
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)));
  const line = (values: string[]) => `│ ${values.map((v, i) => v.padEnd(widths[i]!)).join(" │ ")} │`;
  const rule = (l: string, m: string, r: string) => `${l}${widths.map((w) => "─".repeat(w + 2)).join(m)}${r}`;
  const out = [rule("┌", "┬", "┐"), line(columns), rule("├", "┼", "┤"), ...rows.map((r) => line(columns.map((c) => cell(r[c])))), rule("└", "┴", "┘")];
  ctx.write(out.join("\n") + "\n");
}
