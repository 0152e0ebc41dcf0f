import { z } from "zod";
import { parseWith } from "../../core/http/validate.js";
import { WorkersCodes } from "../errors.js";
import { LogsErrors } from "./errors.js";

/**
 * The Workers Logs query API's bodies (`…/workers/observability/telemetry/{query,keys,values}`), checked and turned
 * into the parts of a SQL WHERE clause both backends run. Every user value is a parameter; a field name only selects
 * a column from FIELDS, never reaches the SQL.
 */

/** The one dataset (the hosted name of Workers' events). */
export const DATASET = "cloudflare-workers";
/** The widest timeframe one query may read. */
export const MAX_TIMEFRAME_MS = 31 * 24 * 3600_000;
/** The most events (or invocations) one query answers with. */
export const MAX_LIMIT = 2000;
/** The most events one answer carries, in either view (the invocations view's newest invocations may hold more). */
export const MAX_ANSWER_EVENTS = MAX_LIMIT;
const MAX_FILTERS = 50;
const MAX_DEPTH = 4;
const MAX_IN_VALUES = 100;

type FieldType = "string" | "number";
/** The fields an event has, with the column each is kept in (the hosted names: `$metadata.*`, `$workers.*`). */
export const FIELDS: ReadonlyMap<string, { column: string; type: FieldType }> = new Map([
  ["$metadata.service", { column: "script", type: "string" }],
  ["$metadata.type", { column: "event_type", type: "string" }],
  ["$metadata.level", { column: "level", type: "string" }],
  ["$metadata.message", { column: "message", type: "string" }],
  ["$metadata.error", { column: "error", type: "string" }],
  ["$metadata.requestId", { column: "request_id", type: "string" }],
  ["$metadata.url", { column: "url", type: "string" }],
  ["$metadata.trigger", { column: "trigger_name", type: "string" }],
  ["$metadata.origin", { column: "origin", type: "string" }],
  ["$metadata.statusCode", { column: "status", type: "number" }],
  ["$metadata.duration", { column: "duration", type: "number" }],
  ["$workers.scriptName", { column: "script", type: "string" }],
  ["$workers.outcome", { column: "outcome", type: "string" }],
  ["$workers.requestId", { column: "request_id", type: "string" }],
  ["$workers.eventType", { column: "origin", type: "string" }],
  ["$workers.wallTimeMs", { column: "duration", type: "number" }],
  ["$workers.cpuTimeMs", { column: "cpu", type: "number" }],
  ["$workers.event.request.method", { column: "method", type: "string" }],
  ["$workers.event.request.url", { column: "url", type: "string" }],
  ["$workers.event.response.status", { column: "status", type: "number" }],
] as const);

/** A WHERE fragment with `?` placeholders, and a dialect's string functions. */
export interface Sql {
  text: string;
  params: unknown[];
}
export interface Dialect {
  /** `haystack` contains `needle` (both SQL expressions). */
  contains(haystack: string, needle: string): string;
}

const timeframe = z.strictObject({ from: z.number().int().nonnegative(), to: z.number().int().nonnegative() });
const datasets = z.array(z.string().max(64)).max(8).optional();
const needle = z.strictObject({
  value: z.union([z.string().min(1).max(1024), z.number(), z.boolean()]),
  isRegex: z.boolean().optional(),
  matchCase: z.boolean().optional(),
});
const filters = z.array(z.unknown()).max(MAX_FILTERS).optional();
const combination = z.enum(["and", "or", "AND", "OR"]).optional();
const leaf = z.strictObject({
  key: z.string().min(1).max(256),
  operation: z.enum([
    "includes",
    "not_includes",
    "starts_with",
    "ends_with",
    "regex",
    "exists",
    "is_null",
    "in",
    "not_in",
    "eq",
    "neq",
    "gt",
    "gte",
    "lt",
    "lte",
    "=",
    "!=",
    ">",
    ">=",
    "<",
    "<=",
    "INCLUDES",
    "DOES_NOT_INCLUDE",
    "MATCH_REGEX",
    "EXISTS",
    "DOES_NOT_EXIST",
    "IN",
    "NOT_IN",
    "STARTS_WITH",
    "ENDS_WITH",
  ]),
  type: z.enum(["string", "number", "boolean"]),
  kind: z.literal("filter").optional(),
  value: z.union([z.string().max(4096), z.number(), z.boolean()]).optional(),
});
const group = z.strictObject({
  kind: z.literal("group"),
  filterCombination: z.enum(["and", "or", "AND", "OR"]),
  filters: z.array(z.unknown()).max(MAX_FILTERS),
});

/** Something the hosted API has that is not built here: refused when given, never ignored. */
const absent = (what: string) =>
  z
    .unknown()
    .optional()
    .refine((v) => v === undefined || v === false || (Array.isArray(v) && v.length === 0), { message: `${what} is not available here` });

const queryBody = z.strictObject({
  queryId: z.string().min(1).max(256),
  timeframe,
  view: z.enum(["traces", "events", "calculations", "invocations", "requests", "agents"]).default("events"),
  limit: z.number().int().min(1).max(MAX_LIMIT).default(50),
  offset: z.string().max(64).optional(),
  offsetBy: z.literal(0).optional(),
  offsetDirection: z.literal("next").optional(),
  dry: z.boolean().optional(),
  granularity: z.number().int().nonnegative().optional(),
  ignoreSeries: z.boolean().optional(),
  chart: absent("chart"),
  compare: absent("compare"),
  chartType: absent("chartType"),
  distributionScale: absent("distributionScale"),
  parameters: z
    .strictObject({
      datasets,
      filterCombination: combination,
      filters,
      needle: needle.optional(),
      limit: z.number().int().min(1).max(MAX_LIMIT).optional(),
      calculations: absent("calculations"),
      groupBys: absent("groupBys"),
      havings: absent("havings"),
      orderBy: absent("orderBy"),
    })
    .default({}),
});

const keysBody = z.strictObject({
  datasets,
  filters,
  from: z.number().int().nonnegative().optional(),
  to: z.number().int().nonnegative().optional(),
  keyNeedle: needle.optional(),
  limit: z.number().int().min(1).max(10_000).optional(),
  needle: needle.optional(),
});

const valuesBody = z.strictObject({
  datasets: z.array(z.string().max(64)).max(8),
  key: z.string().min(1).max(256),
  timeframe,
  type: z.enum(["string", "number", "boolean"]),
  filters,
  limit: z.number().int().min(1).max(1000).default(50),
  needle: needle.optional(),
});

/** What a store runs: the account's events in [from, to], matching `where`, at most `limit`. */
export interface EventQuery {
  from: number;
  to: number;
  where: (d: Dialect) => Sql;
  limit: number;
  /** The id of the last event of the previous page. */
  after?: number;
}
export interface KeysQuery {
  from: number;
  to: number;
  where: (d: Dialect) => Sql;
}
export interface ValuesQuery extends KeysQuery {
  column: string;
  limit: number;
}

export interface ParsedQuery {
  body: z.infer<typeof queryBody>;
  view: "events" | "invocations";
  query: EventQuery;
}

const check = <T extends z.ZodType>(schema: T, body: unknown): z.infer<T> => parseWith(schema, body ?? {}, WorkersCodes.validation);

function checkTimeframe(from: number, to: number): void {
  if (from >= to) throw LogsErrors.timeframe("from must be earlier than to");
  if (to - from > MAX_TIMEFRAME_MS) throw LogsErrors.timeframe(`at most ${MAX_TIMEFRAME_MS / 86_400_000} days may be queried at once; narrow it`);
}

function checkDatasets(names: readonly string[] | undefined): void {
  for (const name of names ?? []) if (name !== DATASET) throw LogsErrors.dataset(name);
}

export function parseQuery(raw: unknown): ParsedQuery {
  const body = check(queryBody, raw);
  if (body.view !== "events" && body.view !== "invocations") throw LogsErrors.notBuilt(`the view "${body.view}"`);
  checkTimeframe(body.timeframe.from, body.timeframe.to);
  checkDatasets(body.parameters.datasets);
  let after: number | undefined;
  if (body.offset !== undefined) {
    if (!/^[1-9]\d{0,15}$/.test(body.offset)) throw LogsErrors.badCursor();
    after = Number(body.offset);
  }
  const where = compileWhere(body.parameters.filters, body.parameters.filterCombination, body.parameters.needle);
  return { body, view: body.view, query: { from: body.timeframe.from, to: body.timeframe.to, where, limit: body.limit, after } };
}

export function parseKeys(raw: unknown, now: number, retentionMs: number): { query: KeysQuery; limit: number; keyNeedle?: z.infer<typeof needle> } {
  const body = check(keysBody, raw);
  checkDatasets(body.datasets);
  const to = body.to ?? now;
  const from = body.from ?? Math.max(0, to - Math.min(retentionMs, MAX_TIMEFRAME_MS));
  checkTimeframe(from, to);
  if (body.keyNeedle?.isRegex) throw LogsErrors.notBuilt("a regular expression in keyNeedle");
  return { query: { from, to, where: compileWhere(body.filters, "and", body.needle) }, limit: body.limit ?? 100, keyNeedle: body.keyNeedle };
}

export function parseValues(raw: unknown): { query: ValuesQuery; key: string; type: FieldType } {
  const body = check(valuesBody, raw);
  checkDatasets(body.datasets);
  checkTimeframe(body.timeframe.from, body.timeframe.to);
  const field = fieldOf(body.key, body.type);
  return {
    key: body.key,
    type: field.type,
    query: { from: body.timeframe.from, to: body.timeframe.to, where: compileWhere(body.filters, "and", body.needle), column: field.column, limit: body.limit },
  };
}

function fieldOf(key: string, type: string): { column: string; type: FieldType } {
  const field = FIELDS.get(key);
  if (!field) throw LogsErrors.unknownKey(key, [...FIELDS.keys()]);
  if (field.type !== type) throw LogsErrors.keyType(key, type, field.type);
  return field;
}

/**
 * Checks the filters (a tree of groups at most MAX_DEPTH deep, MAX_FILTERS leaves in all) and the needle now, so a
 * bad query is refused before any store is read; the SQL is written per dialect when the store runs it.
 */
function compileWhere(raw: unknown[] | undefined, combine: string | undefined, n: z.infer<typeof needle> | undefined): (d: Dialect) => Sql {
  let leaves = 0;
  type Node = { leaf: z.infer<typeof leaf>; column: string; type: FieldType } | { all: boolean; nodes: Node[] };
  const walk = (items: unknown[], depth: number): Node[] =>
    items.map((item) => {
      if (typeof item === "object" && item !== null && (item as { kind?: unknown }).kind === "group") {
        if (depth >= MAX_DEPTH) throw LogsErrors.notBuilt(`filter groups nested deeper than ${MAX_DEPTH}`);
        const g = check(group, item);
        return { all: g.filterCombination.toLowerCase() === "and", nodes: walk(g.filters, depth + 1) };
      }
      if (++leaves > MAX_FILTERS) throw LogsErrors.notBuilt(`more than ${MAX_FILTERS} filters`);
      const l = check(leaf, item);
      const field = fieldOf(l.key, l.type);
      checkLeaf(l, field.type);
      return { leaf: l, ...field };
    });
  const root: Node = { all: (combine ?? "and").toLowerCase() === "and", nodes: walk(raw ?? [], 1) };
  if (n?.isRegex) throw LogsErrors.notBuilt("a regular expression as the needle");

  return (d) => {
    const params: unknown[] = [];
    const render = (node: Node): string => {
      if ("nodes" in node) {
        if (node.nodes.length === 0) return "1=1";
        return `(${node.nodes.map(render).join(node.all ? " AND " : " OR ")})`;
      }
      return renderLeaf(node.leaf, node.column, node.type, params, d);
    };
    let text = render(root);
    if (n !== undefined) {
      const value = String(n.value);
      if (n.matchCase) {
        text += ` AND (${d.contains("message", "CAST(? AS TEXT)")} OR ${d.contains("body", "CAST(? AS TEXT)")})`;
        params.push(value, value);
      } else {
        text += ` AND (${d.contains("lower(message)", "lower(CAST(? AS TEXT))")} OR ${d.contains("lower(body)", "lower(CAST(? AS TEXT))")})`;
        params.push(value, value);
      }
    }
    return { text, params };
  };
}

const OPS: Record<string, string> = {
  INCLUDES: "includes",
  DOES_NOT_INCLUDE: "not_includes",
  STARTS_WITH: "starts_with",
  ENDS_WITH: "ends_with",
  EXISTS: "exists",
  DOES_NOT_EXIST: "is_null",
  IN: "in",
  NOT_IN: "not_in",
  MATCH_REGEX: "regex",
  "=": "eq",
  "!=": "neq",
  ">": "gt",
  ">=": "gte",
  "<": "lt",
  "<=": "lte",
};
const opOf = (l: z.infer<typeof leaf>) => OPS[l.operation] ?? l.operation;
const STRING_ONLY = new Set(["includes", "not_includes", "starts_with", "ends_with"]);
const NUMBER_ONLY = new Set(["gt", "gte", "lt", "lte"]);

function checkLeaf(l: z.infer<typeof leaf>, type: FieldType): void {
  const op = opOf(l);
  if (op === "regex") throw LogsErrors.operation(l.key, l.operation, "is not available here (use includes, starts_with or ends_with)");
  if (op === "exists" || op === "is_null") return;
  if (l.value === undefined) throw LogsErrors.operation(l.key, l.operation, "needs a value");
  if (STRING_ONLY.has(op) && type !== "string") throw LogsErrors.operation(l.key, l.operation, "applies to string fields");
  if (NUMBER_ONLY.has(op) && type !== "number") throw LogsErrors.operation(l.key, l.operation, "applies to number fields");
  if (op === "in" || op === "not_in") {
    const values = String(l.value).split(",");
    if (values.length > MAX_IN_VALUES) throw LogsErrors.operation(l.key, l.operation, `takes at most ${MAX_IN_VALUES} values`);
    if (type === "number" && values.some((v) => !Number.isFinite(Number(v.trim())))) throw LogsErrors.operation(l.key, l.operation, "needs numbers");
  } else if (type === "number" && !Number.isFinite(Number(l.value))) {
    throw LogsErrors.operation(l.key, l.operation, "needs a number");
  }
}

function renderLeaf(l: z.infer<typeof leaf>, column: string, type: FieldType, params: unknown[], d: Dialect): string {
  const op = opOf(l);
  const ph = type === "number" ? "CAST(? AS DOUBLE PRECISION)" : "CAST(? AS TEXT)";
  const value = type === "number" ? Number(l.value) : String(l.value);
  const one = (sql: string, n = 1) => {
    for (let i = 0; i < n; i++) params.push(value);
    return sql;
  };
  switch (op) {
    case "exists":
      return `${column} IS NOT NULL`;
    case "is_null":
      return `${column} IS NULL`;
    case "includes":
      return one(d.contains(column, ph));
    case "not_includes":
      return one(`(${column} IS NULL OR NOT ${d.contains(column, ph)})`);
    case "starts_with":
      return one(`substr(${column}, 1, length(${ph})) = ${ph}`, 2);
    case "ends_with":
      return one(`(length(${column}) >= length(${ph}) AND substr(${column}, length(${column}) - length(${ph}) + 1) = ${ph})`, 3);
    case "eq":
      return one(`${column} = ${ph}`);
    case "neq":
      return one(`(${column} IS NULL OR ${column} <> ${ph})`);
    case "gt":
      return one(`${column} > ${ph}`);
    case "gte":
      return one(`${column} >= ${ph}`);
    case "lt":
      return one(`${column} < ${ph}`);
    case "lte":
      return one(`${column} <= ${ph}`);
    case "in":
    case "not_in": {
      const values = String(l.value)
        .split(",")
        .map((v) => v.trim());
      for (const v of values) params.push(type === "number" ? Number(v) : v);
      const list = `${column} IN (${values.map(() => ph).join(", ")})`;
      return op === "in" ? list : `(${column} IS NULL OR NOT ${list})`;
    }
  }
  throw LogsErrors.operation(l.key, l.operation, "is not available here");
}
