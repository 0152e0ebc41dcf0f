import { D1Errors } from "../errors.js";
import { D1_LIMITS } from "../limits.js";
import { refusedStatement } from "../sql/statement-guard.js";
import { numberedParameters, splitStatements } from "../sql/statements.js";

/** A value D1 binds: JSON's scalars, and bytes as an array of numbers (what workerd's D1 API sends for a BLOB). */
export type D1Value = string | number | null | number[];

/** One query as a client sends it: SQL (one statement, or several when it has no params) and its parameters. */
export interface D1Query {
  sql: string;
  params?: unknown[] | null;
}

/** A statement ready for better-sqlite3: its SQL and its parameters, positional or by `?NNN` number. */
export interface PlannedStatement {
  /** Which of the request's queries it comes from. */
  query: number;
  sql: string;
  params: (string | number | null | Buffer)[] | Record<number, string | number | null | Buffer>;
}

/**
 * What a request will run, checked before anything runs: each query split into its statements (a query with
 * params must be one statement), every statement allowed by the guard, parameters of the types D1 binds.
 * Throws the D1Errors refusal of the first problem.
 */
export function planQueries(queries: readonly D1Query[]): PlannedStatement[] {
  let bytes = 0;
  const out: PlannedStatement[] = [];
  for (const [index, q] of queries.entries()) {
    bytes += Buffer.byteLength(q.sql);
    if (bytes > D1_LIMITS.sqlBytes) throw D1Errors.sqlTooLarge();
    const statements = splitStatements(q.sql);
    const params = q.params ?? [];
    if (params.length > 0 && statements.length > 1) throw D1Errors.paramsWithManyStatements();
    if (params.length > D1_LIMITS.params) throw D1Errors.tooManyParams();
    for (const s of statements) {
      const refused = refusedStatement(s);
      if (refused) throw D1Errors.refused(refused);
      const values = params.map(toSqliteValue);
      const numbered = numberedParameters(s);
      out.push({ query: index, sql: s.sql, params: numbered.length > 0 ? byNumber(values, numbered) : values });
      if (out.length > D1_LIMITS.statements) throw D1Errors.tooManyStatements();
    }
  }
  if (out.length === 0) throw D1Errors.noStatements();
  return out;
}

/** `?NNN` parameters bind by number in better-sqlite3: { 1: first, 2: second, … } for the numbers the statement uses. */
function byNumber(values: PlannedStatement["params"] & unknown[], numbers: number[]): Record<number, string | number | null | Buffer> {
  const out: Record<number, string | number | null | Buffer> = {};
  for (const n of numbers) if (n >= 1 && n <= values.length) out[n] = values[n - 1]!;
  return out;
}

function toSqliteValue(v: unknown, index: number): string | number | null | Buffer {
  if (v === null || typeof v === "string") return v;
  if (typeof v === "number") {
    if (!Number.isFinite(v)) throw D1Errors.paramType(index);
    return v;
  }
  if (typeof v === "boolean") return v ? 1 : 0;
  if (Array.isArray(v) && v.every((b) => Number.isInteger(b) && b >= 0 && b < 256)) return Buffer.from(v as number[]);
  throw D1Errors.paramType(index);
}
