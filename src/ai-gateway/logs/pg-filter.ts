import { LOG_ORDER_FIELDS, type LogCondition, type LogField, type LogFilter, type LogOrder, type LogValue } from "./store.js";

/** A WHERE clause with `$n` placeholders and the values bound to them. */
export interface PgWhere {
  sql: string;
  args: unknown[];
}

const TOTAL_TOKENS = "(coalesce(tokens_in, 0) + coalesce(tokens_out, 0))";

type ColumnField = Exclude<LogField, "metadata.key" | "metadata.value">;
/** Fields compared as text; every other (metadata aside: below) is a number, booleans being 0/1. */
const TEXT_FIELDS = new Set<ColumnField>([
  "id",
  "created_at",
  "request_content_type",
  "response_content_type",
  "request_type",
  "provider",
  "model",
  "event_id",
]);
/** The SQL of the fields that are not a column of their own name. */
const FIELD_SQL: Partial<Record<ColumnField, string>> = { tokens: TOTAL_TOKENS, authentication: "authenticated" };

const COMPARE = { lt: "<", gt: ">", lte: "<=", gte: ">=" } as const;

/**
 * A value as a number column compares it (as SQLite would: booleans are 0/1, numeric text is its number), or
 * undefined when it cannot equal any number. PostgreSQL would refuse such a value; here it simply matches nothing.
 */
function asNumber(v: Exclude<LogValue, null>): number | undefined {
  if (typeof v === "number") return v;
  if (typeof v === "boolean") return v ? 1 : 0;
  const n = v.trim() === "" ? NaN : Number(v);
  return Number.isFinite(n) ? n : undefined;
}

/** A value as a text column compares it (booleans are the 1/0 SQLite keeps). */
const asText = (v: Exclude<LogValue, null>): string => (typeof v === "boolean" ? (v ? "1" : "0") : String(v));

/** Builds one WHERE clause; `bind` returns the placeholder of a new parameter. */
class WhereBuilder {
  readonly parts: string[] = [];
  readonly args: unknown[] = [];

  bind(value: unknown): string {
    this.args.push(value);
    return `$${this.args.length}`;
  }

  /** `test` LIKE any of the values, case-insensitively (SQLite's LIKE on ASCII); no escape character, as in SQLite. */
  containsAny(test: string, values: readonly LogValue[]): string {
    return `(${values.map((v) => `${test} ILIKE ${this.bind(`%${v === null ? "" : asText(v)}%`)} ESCAPE ''`).join(" OR ")})`;
  }

  add(c: LogCondition): void {
    if (c.field === "metadata.key" || c.field === "metadata.value") return this.addMetadata(c);
    const col = { sql: FIELD_SQL[c.field] ?? c.field, numeric: !TEXT_FIELDS.has(c.field) };
    const present = c.values.filter((v) => v !== null);
    const typed = col.numeric ? present.map(asNumber).filter((n) => n !== undefined) : present.map(asText);
    const arrayType = col.numeric ? "float8[]" : "text[]";
    switch (c.operator) {
      case "eq":
      case "neq": {
        const tests = [`${col.sql} = ANY(${this.bind(typed)}::${arrayType})`];
        if (present.length < c.values.length) tests.push(`${col.sql} IS NULL`);
        this.parts.push(`${c.operator === "neq" ? "NOT " : ""}(${tests.join(" OR ")})`);
        return;
      }
      case "contains":
        this.parts.push(this.containsAny(`CAST(${col.sql} AS TEXT)`, c.values));
        return;
      default: {
        // A null or a value no number equals compares as nothing (SQLite: NULL); the first value is the bound.
        const bound = c.values[0] ?? null;
        const value = bound === null ? null : col.numeric ? asNumber(bound) : asText(bound);
        this.parts.push(value === undefined ? "FALSE" : `${col.sql} ${COMPARE[c.operator]} ${this.bind(value)}::${col.numeric ? "float8" : "text"}`);
      }
    }
  }

  /** Any entry of the metadata (its values as JSON text: a string bare, a number or boolean as written). */
  private addMetadata(c: LogCondition): void {
    const col = c.field === "metadata.key" ? "m.key" : "m.value";
    const test =
      c.operator === "contains"
        ? this.containsAny(col, c.values)
        : `${col} = ANY(${this.bind(c.values.filter((v) => v !== null).map((v) => String(v)))}::text[])`;
    this.parts.push(`${c.operator === "neq" ? "NOT " : ""}EXISTS (SELECT 1 FROM jsonb_each_text(metadata::jsonb) AS m WHERE ${test})`);
  }
}

/** The WHERE clause selecting a gateway's logs that pass `filter`. */
export function pgLogWhere(accountId: string, gatewayId: string, filter: LogFilter): PgWhere {
  const b = new WhereBuilder();
  b.parts.push(`account_id = ${b.bind(accountId)}`, `gateway_id = ${b.bind(gatewayId)}`);
  for (const c of filter.conditions) b.add(c);
  if (filter.search) {
    const pattern = b.bind(`%${filter.search}%`);
    b.parts.push(`(${["id", "model", "provider", "path"].map((col) => `${col} ILIKE ${pattern} ESCAPE ''`).join(" OR ")})`);
  }
  return { sql: b.parts.join(" AND "), args: b.args };
}

/** ORDER BY of a selection: ties go by write order (`seq`), in the same direction; nulls sort low, as in SQLite. */
export function pgLogOrderBy(order: LogOrder): string {
  // The field becomes SQL: a value the type does not allow is a bug of the caller, never run.
  if (!(LOG_ORDER_FIELDS as readonly string[]).includes(order.by)) throw new Error(`not a log order field: ${order.by}`);
  return order.direction === "asc" ? `${order.by} ASC NULLS FIRST, seq ASC` : `${order.by} DESC NULLS LAST, seq DESC`;
}
