import { z } from "zod";
import { parseUserJson } from "../../core/http/json-input.js";
import { parseWith } from "../../core/http/validate.js";
import { AigCodes, AigErrors } from "../errors.js";
import { LOG_FILTER_FIELDS, LOG_ORDER_FIELDS, type LogCondition, type LogField, type LogFilter, type LogOrder } from "./store.js";

/** A Set: a client's key such as `constructor` is simply unknown. */
const FIELDS = new Set<string>(LOG_FILTER_FIELDS);
const ORDER_FIELDS = new Set<string>(LOG_ORDER_FIELDS);

/**
 * Bounds of one request's filters: each is a condition of the SQL, and a "contains" an OR of one LIKE per value, so a
 * URL's worth of values (2,000 fit) passed SQLite's expression depth (1,000) and failed the request. Far above what
 * a dashboard or an SDK sends.
 */
const MAX_FILTERS = 100;
const MAX_FILTER_VALUES = 100;

const filterSchema = z
  .array(
    z.object({
      key: z.string().refine((k) => FIELDS.has(k), { message: "Invalid enum value" }),
      operator: z.enum(["eq", "neq", "contains", "lt", "gt"]),
      value: z
        .array(z.union([z.string(), z.number(), z.boolean(), z.null()]))
        .min(1)
        .max(MAX_FILTER_VALUES),
    }),
  )
  .max(MAX_FILTERS);

const conditionsOf = (filters: z.output<typeof filterSchema>): LogCondition[] =>
  filters.map((f) => ({ field: f.key as LogField, operator: f.operator, values: f.value }));

/** The older flat range parameters (`min_<name>`, `max_<name>`) and the field each bounds. */
const FLAT_RANGES: [string, LogField][] = [
  ["cost", "cost"],
  ["duration", "duration"],
  ["tokens_in", "tokens_in"],
  ["tokens_out", "tokens_out"],
  ["total_tokens", "tokens"],
];

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

/** The logs a query string selects: `filters` (a JSON array, or the SDKs' dot form) and the older flat parameters. */
export function readLogFilter(q: Record<string, unknown>): LogFilter {
  const conditions: LogCondition[] = [];
  if (q["filters.key"] !== undefined) conditions.push(...conditionsOf(parseWith(filterSchema, dotFilters(q), AigCodes.validation)));
  if (q.filters !== undefined && q.filters !== "") {
    let parsed: unknown;
    try {
      parsed = typeof q.filters === "string" ? parseUserJson(q.filters) : q.filters;
    } catch (e) {
      throw AigErrors.filtersNotJson((e as Error).message);
    }
    conditions.push(...conditionsOf(parseWith(filterSchema, parsed, AigCodes.validation)));
  }
  for (const name of ["success", "cached"] as const) {
    const v = q[name];
    if (v === undefined) continue;
    if (v !== "true" && v !== "false") throw AigErrors.notBoolean(name);
    conditions.push({ field: name, operator: "eq", values: [v === "true"] });
  }
  for (const name of ["provider", "model"] as const) {
    const v = q[name];
    if (typeof v === "string") conditions.push({ field: name, operator: "eq", values: [v] });
  }
  for (const [name, operator] of [
    ["start_date", "gte"],
    ["end_date", "lte"],
  ] as const) {
    const v = q[name];
    if (v === undefined) continue;
    if (typeof v !== "string" || Number.isNaN(Date.parse(v))) throw AigErrors.notDateTime(name);
    conditions.push({ field: "created_at", operator, values: [new Date(v).toISOString()] });
  }
  for (const [name, field] of FLAT_RANGES) {
    for (const [prefix, operator] of [
      ["min_", "gte"],
      ["max_", "lte"],
    ] as const) {
      const v = q[prefix + name];
      if (v === undefined) continue;
      const n = Number(v);
      if (!Number.isFinite(n)) throw AigErrors.notNumber(prefix + name);
      conditions.push({ field, operator, values: [n] });
    }
  }
  if (q.feedback !== undefined) {
    const n = Number(q.feedback);
    if (!Number.isFinite(n)) throw AigErrors.notNumber("feedback");
    conditions.push({ field: "feedback", operator: "eq", values: [n] });
  }
  return typeof q.search === "string" && q.search ? { conditions, search: q.search } : { conditions };
}

/** The order a query string asks for; the newest first unless it says otherwise. */
export function readLogOrder(q: Record<string, unknown>): LogOrder {
  const by = q.order_by ?? "created_at";
  if (typeof by !== "string" || !ORDER_FIELDS.has(by)) throw AigErrors.orderBy(LOG_ORDER_FIELDS);
  const direction = q.order_by_direction ?? q.direction ?? "desc";
  if (direction !== "asc" && direction !== "desc") throw AigErrors.orderDirection();
  return { by: by as LogOrder["by"], direction };
}

/** The `limit` of a delete: how many of the selected logs, in order (all when absent). */
export function readDeleteLimit(q: Record<string, unknown>): number | undefined {
  if (q.limit === undefined) return undefined;
  const limit = Number(q.limit);
  if (!Number.isSafeInteger(limit) || limit < 1) throw AigErrors.deleteLimit();
  return limit;
}
