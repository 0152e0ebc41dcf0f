import { LOG_ORDER_FIELDS, type LogCondition, type LogField, type LogFilter, type LogOrder } from "./store.js";

/** A WHERE clause and the values bound to its placeholders. */
export interface Where {
  sql: string;
  args: unknown[];
}

const TOTAL_TOKENS = "(coalesce(tokens_in, 0) + coalesce(tokens_out, 0))";

/** The SQL each filter field reads (metadata fields are matched in json_each, below). */
const COLUMNS: Record<Exclude<LogField, "metadata.key" | "metadata.value">, string> = {
  id: "id",
  created_at: "created_at",
  request_content_type: "request_content_type",
  response_content_type: "response_content_type",
  request_type: "request_type",
  success: "success",
  cached: "cached",
  provider: "provider",
  model: "model",
  cost: "cost",
  tokens: TOTAL_TOKENS,
  tokens_in: "tokens_in",
  tokens_out: "tokens_out",
  duration: "duration",
  feedback: "feedback",
  event_id: "event_id",
  status_code: "status_code",
  authentication: "authenticated",
};

const COMPARE = { lt: "<", gt: ">", lte: "<=", gte: ">=" } as const;

/** Booleans are stored as 0 and 1. */
const sqlArg = (v: unknown) => (typeof v === "boolean" ? Number(v) : v);

function addCondition(c: LogCondition, out: Where): void {
  const vals = c.values.map(sqlArg);
  if (c.field === "metadata.key" || c.field === "metadata.value") {
    const col = c.field === "metadata.key" ? "key" : "value";
    const test = c.operator === "contains" ? vals.map(() => `CAST(${col} AS TEXT) LIKE ?`).join(" OR ") : `${col} IN (${vals.map(() => "?").join(", ")})`;
    const args = c.operator === "contains" ? vals.map((v) => `%${v}%`) : vals;
    out.sql += ` AND ${c.operator === "neq" ? "NOT " : ""}EXISTS (SELECT 1 FROM json_each(logs.metadata) WHERE ${test})`;
    out.args.push(...args);
    return;
  }
  const col = COLUMNS[c.field];
  switch (c.operator) {
    case "eq":
    case "neq": {
      const nonNull = vals.filter((v) => v !== null);
      const parts: string[] = [];
      if (nonNull.length) parts.push(`${col} IN (${nonNull.map(() => "?").join(", ")})`);
      if (nonNull.length < vals.length) parts.push(`${col} IS NULL`);
      out.sql += ` AND ${c.operator === "neq" ? "NOT " : ""}(${parts.join(" OR ")})`;
      out.args.push(...nonNull);
      return;
    }
    case "contains":
      out.sql += ` AND (${vals.map(() => `CAST(${col} AS TEXT) LIKE ?`).join(" OR ")})`;
      out.args.push(...vals.map((v) => `%${v}%`));
      return;
    default:
      out.sql += ` AND ${col} ${COMPARE[c.operator]} ?`;
      out.args.push(vals[0]);
  }
}

/** The WHERE clause selecting a gateway's logs that pass `filter`. */
export function logWhere(accountId: string, gatewayId: string, filter: LogFilter): Where {
  const out: Where = { sql: "account_id = ? AND gateway_id = ?", args: [accountId, gatewayId] };
  for (const c of filter.conditions) addCondition(c, out);
  if (filter.search) {
    out.sql += " AND (id LIKE ? OR model LIKE ? OR provider LIKE ? OR path LIKE ?)";
    out.args.push(...Array(4).fill(`%${filter.search}%`));
  }
  return out;
}

/** ORDER BY of a selection: ties go by write order (`seq`), in the same direction. */
export function logOrderBy(order: LogOrder): string {
  // The field becomes SQL: a value the type does not allow is a bug of the caller, never run.
  if (!(LOG_ORDER_FIELDS as readonly string[]).includes(order.by)) throw new Error(`not a log order field: ${order.by}`);
  const dir = order.direction === "asc" ? "ASC" : "DESC";
  return `${order.by} ${dir}, seq ${dir}`;
}
