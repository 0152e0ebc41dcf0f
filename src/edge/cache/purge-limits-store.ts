import type { Migration } from "../../core/db/sqlite.js";
import type { PgMigration } from "../../core/db/pg-migrations.js";

/** One token bucket: `size` tokens at most, refilled at `perSecond`. */
export interface BucketShape {
  perSecond: number;
  size: number;
}

/** What one take answered: taken, and the tokens left (or, not taken, the tokens there were). */
export interface TakeResult {
  taken: boolean;
  tokens: number;
}

/**
 * The purge rate limits' buckets, in the rows store all nodes share (SQLite embedded, PostgreSQL on several nodes),
 * so a cluster counts each account once. Every backend keeps these promises (purge-limits-store.contract.ts):
 * - `take` is one atomic step: the bucket (accountId, kind) is refilled to `now` (a new one starts full; a clock behind
 *   the last take's refills nothing), and `n` tokens are taken when it holds them, else none; concurrent takes of one
 *   bucket never both see the same tokens (no read-then-write).
 * - buckets of other accounts and kinds are untouched.
 */
export interface PurgeLimitStore {
  take(accountId: string, kind: string, shape: BucketShape, n: number, now: number): Promise<TakeResult>;
}

/** The bus/schema area of the purge limits on PostgreSQL. */
export const PURGE_LIMITS_AREA = "edge_purge_limits";

const TABLE = "purge_buckets";

export const PURGE_LIMITS_MIGRATIONS: readonly Migration[] = [
  `CREATE TABLE ${TABLE} (
     account_id TEXT NOT NULL,
     kind TEXT NOT NULL,
     tokens REAL NOT NULL,
     at_ms INTEGER NOT NULL,
     taken INTEGER NOT NULL,
     PRIMARY KEY (account_id, kind)
   );`,
];

export const PURGE_LIMITS_PG_MIGRATIONS: readonly PgMigration[] = [
  `CREATE TABLE ${TABLE} (
     account_id TEXT COLLATE "C" NOT NULL,
     kind TEXT COLLATE "C" NOT NULL,
     tokens DOUBLE PRECISION NOT NULL,
     at_ms BIGINT NOT NULL,
     taken SMALLINT NOT NULL,
     PRIMARY KEY (account_id, kind)
   );`,
];

/**
 * The take as one upsert: the row's new tokens are computed from its old ones inside the statement, under the row's
 * lock (PostgreSQL: ON CONFLICT DO UPDATE; SQLite: one statement is one write transaction). Written with CASE rather
 * than LEAST/GREATEST so both dialects read it alike; `:name` parameters, made positional per backend.
 */
export function takeSql(table: string): string {
  const size = "CAST(:size AS DOUBLE PRECISION)";
  const n = "CAST(:n AS DOUBLE PRECISION)";
  const rate = "CAST(:rate AS DOUBLE PRECISION)";
  const now = "CAST(:now AS BIGINT)";
  const elapsed = `(CASE WHEN ${now} > b.at_ms THEN ${now} - b.at_ms ELSE 0 END)`;
  const grown = `(b.tokens + ${elapsed} * ${rate} / 1000.0)`;
  const refilled = `(CASE WHEN ${grown} > ${size} THEN ${size} ELSE ${grown} END)`;
  // Refills are fractions (Free: 1/12 of a token a second): a take due to the millisecond must not miss by a rounding.
  const enough = `${refilled} + 0.000001 >= ${n}`;
  return `INSERT INTO ${table} AS b (account_id, kind, tokens, at_ms, taken)
    VALUES (:account, :kind, CASE WHEN ${size} >= ${n} THEN ${size} - ${n} ELSE ${size} END, ${now}, CASE WHEN ${size} >= ${n} THEN 1 ELSE 0 END)
    ON CONFLICT (account_id, kind) DO UPDATE SET
      tokens = CASE WHEN ${enough} THEN ${refilled} - ${n} ELSE ${refilled} END,
      taken = CASE WHEN ${enough} THEN 1 ELSE 0 END,
      at_ms = CASE WHEN ${now} > b.at_ms THEN ${now} ELSE b.at_ms END
    RETURNING tokens, taken`;
}

export const PURGE_BUCKETS_TABLE = TABLE;

export interface TakeRow {
  tokens: number | string;
  taken: number | string;
}

export const toTakeResult = (row: TakeRow | undefined): TakeResult => {
  if (!row) throw new Error("the purge bucket upsert returned no row");
  // Tokens to the millionth (what the refill's rounding leaves past that is noise, e.g. -1e-16 after a take due exactly).
  return { taken: Number(row.taken) === 1, tokens: Math.round(Number(row.tokens) * 1e6) / 1e6 + 0 };
};
