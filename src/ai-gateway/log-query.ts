import { z } from "zod";
import { EdgeError } from "../core/errors.js";
import { parseWith } from "../core/http/validate.js";
import { AigCodes } from "./codes.js";
import { parseUserJson } from "../core/http/json-input.js";

const TOTAL_TOKENS = "(coalesce(tokens_in, 0) + coalesce(tokens_out, 0))";

/** Filter keys of the logs API and the SQL each one reads (a Map: a key such as `constructor` is simply unknown). */
const KEYS = new Map<string, string>([
  ["id", "id"],
  ["created_at", "created_at"],
  ["request_content_type", "request_content_type"],
  ["response_content_type", "response_content_type"],
  ["request_type", "request_type"],
  ["success", "success"],
  ["cached", "cached"],
  ["provider", "provider"],
  ["model", "model"],
  ["cost", "cost"],
  ["tokens", TOTAL_TOKENS],
  ["tokens_in", "tokens_in"],
  ["tokens_out", "tokens_out"],
  ["duration", "duration"],
  ["feedback", "feedback"],
  ["event_id", "event_id"],
  ["status_code", "status_code"],
  ["authentication", "authenticated"],
]);
const META_KEYS = new Set(["metadata.key", "metadata.value"]);

export const ORDER_KEYS = [
  "created_at",
  "provider",
  "model",
  "success",
  "cached",
  "cost",
  "tokens_in",
  "tokens_out",
  "duration",
  "feedback",
  "status_code",
] as const;

const filterSchema = z.array(
  z.object({
    key: z.string().refine((k) => KEYS.has(k) || META_KEYS.has(k), { message: "Invalid enum value" }),
    operator: z.enum(["eq", "neq", "contains", "lt", "gt"]),
    value: z.array(z.union([z.string(), z.number(), z.boolean(), z.null()])).min(1),
  }),
);

export interface Where {
  sql: string;
  args: unknown[];
}

const sqlArg = (v: unknown) => (typeof v === "boolean" ? Number(v) : v);

function fromFilter(f: z.infer<typeof filterSchema>[number], out: Where): void {
  const vals = f.value.map(sqlArg);
  if (META_KEYS.has(f.key)) {
    const col = f.key === "metadata.key" ? "key" : "value";
    const test = f.operator === "contains" ? vals.map(() => `CAST(${col} AS TEXT) LIKE ?`).join(" OR ") : `${col} IN (${vals.map(() => "?").join(", ")})`;
    const args = f.operator === "contains" ? vals.map((v) => `%${v}%`) : vals;
    out.sql += ` AND ${f.operator === "neq" ? "NOT " : ""}EXISTS (SELECT 1 FROM json_each(logs.metadata) WHERE ${test})`;
    out.args.push(...args);
    return;
  }
  const col = KEYS.get(f.key)!;
  switch (f.operator) {
    case "eq":
    case "neq": {
      const nonNull = vals.filter((v) => v !== null);
      const parts: string[] = [];
      if (nonNull.length) parts.push(`${col} IN (${nonNull.map(() => "?").join(", ")})`);
      if (nonNull.length < vals.length) parts.push(`${col} IS NULL`);
      out.sql += ` AND ${f.operator === "neq" ? "NOT " : ""}(${parts.join(" OR ")})`;
      out.args.push(...nonNull);
      return;
    }
    case "contains":
      out.sql += ` AND (${vals.map(() => `CAST(${col} AS TEXT) LIKE ?`).join(" OR ")})`;
      out.args.push(...vals.map((v) => `%${v}%`));
      return;
    case "lt":
    case "gt":
      out.sql += ` AND ${col} ${f.operator === "lt" ? "<" : ">"} ?`;
      out.args.push(vals[0]);
  }
}

const FLAT_RANGES: Record<string, string> = {
  cost: "cost",
  duration: "duration",
  tokens_in: "tokens_in",
  tokens_out: "tokens_out",
  total_tokens: TOTAL_TOKENS,
};

const list = (v: unknown): string[] => (v === undefined ? [] : Array.isArray(v) ? v.map(String) : [String(v)]);
const typed = (v: string): string | number | boolean | null =>
  v === "true" ? true : v === "false" ? false : v === "null" ? null : v !== "" && Number.isFinite(Number(v)) ? Number(v) : v;

/**
 * The Cloudflare SDKs send filters in "dot" form (`filters.key=a&filters.operator=eq&filters.value=x`, repeated
 * per filter). Values pair with keys one to one when their counts match; with one key, all values are its.
 */
function dotFilters(q: Record<string, unknown>): unknown[] {
  const keys = list(q["filters.key"]);
  const ops = list(q["filters.operator"]);
  const values = list(q["filters.value"]).map(typed);
  return keys.map((key, i) => ({ key, operator: ops[i] ?? ops[0], value: keys.length === 1 ? values : values.length === keys.length ? [values[i]] : [] }));
}

/** Builds the WHERE clause of a logs query from `filters` (JSON array, or the SDKs' dot form) and the older flat parameters. */
export function logWhere(accountId: string, gatewayId: string, q: Record<string, unknown>): Where {
  const out: Where = { sql: "account_id = ? AND gateway_id = ?", args: [accountId, gatewayId] };
  if (q["filters.key"] !== undefined) {
    for (const f of parseWith(filterSchema, dotFilters(q), AigCodes.validation)) fromFilter(f, out);
  }
  if (q.filters !== undefined && q.filters !== "") {
    let parsed: unknown;
    try {
      parsed = typeof q.filters === "string" ? parseUserJson(q.filters) : q.filters;
    } catch (e) {
      throw new EdgeError(400, AigCodes.validation, `filters: must be a JSON array of {key, operator, value[]} (${(e as Error).message})`, {
        pointer: "filters",
      });
    }
    for (const f of parseWith(filterSchema, parsed, AigCodes.validation)) fromFilter(f, out);
  }
  const bool = (name: string) => {
    const v = q[name];
    if (v === undefined) return;
    if (v !== "true" && v !== "false") throw new EdgeError(400, AigCodes.validation, `${name}: must be true or false`, { pointer: name });
    out.sql += ` AND ${name} = ?`;
    out.args.push(v === "true" ? 1 : 0);
  };
  bool("success");
  bool("cached");
  for (const name of ["provider", "model"]) {
    if (typeof q[name] === "string") {
      out.sql += ` AND ${name} = ?`;
      out.args.push(q[name]);
    }
  }
  if (typeof q.search === "string" && q.search) {
    out.sql += " AND (id LIKE ? OR model LIKE ? OR provider LIKE ? OR path LIKE ?)";
    out.args.push(...Array(4).fill(`%${q.search}%`));
  }
  for (const [name, col] of [
    ["start_date", ">="],
    ["end_date", "<="],
  ] as const) {
    const v = q[name];
    if (v === undefined) continue;
    if (typeof v !== "string" || Number.isNaN(Date.parse(v))) throw new EdgeError(400, AigCodes.validation, `${name}: must be a date-time`, { pointer: name });
    out.sql += ` AND created_at ${col} ?`;
    out.args.push(new Date(v).toISOString());
  }
  for (const [name, expr] of Object.entries(FLAT_RANGES)) {
    for (const [prefix, op] of [
      ["min_", ">="],
      ["max_", "<="],
    ] as const) {
      const v = q[prefix + name];
      if (v === undefined) continue;
      const n = Number(v);
      if (!Number.isFinite(n)) throw new EdgeError(400, AigCodes.validation, `${prefix}${name}: must be a number`, { pointer: prefix + name });
      out.sql += ` AND ${expr} ${op} ?`;
      out.args.push(n);
    }
  }
  if (q.feedback !== undefined) {
    out.sql += " AND feedback = ?";
    out.args.push(Number(q.feedback));
  }
  return out;
}

/** ORDER BY of a logs query; the newest first unless asked otherwise. */
export function logOrder(q: Record<string, unknown>): string {
  const by = (q.order_by as string) ?? "created_at";
  if (!(ORDER_KEYS as readonly string[]).includes(by)) {
    throw new EdgeError(400, AigCodes.validation, `order_by: must be one of ${ORDER_KEYS.join(", ")}`, { pointer: "order_by" });
  }
  const dirRaw = (q.order_by_direction ?? q.direction ?? "desc") as string;
  if (dirRaw !== "asc" && dirRaw !== "desc")
    throw new EdgeError(400, AigCodes.validation, "order_by_direction: must be asc or desc", { pointer: "order_by_direction" });
  return `${by} ${dirRaw.toUpperCase()}, seq ${dirRaw.toUpperCase()}`;
}
