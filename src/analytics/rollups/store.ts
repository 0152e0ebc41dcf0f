/**
 * Per-minute rollups: what the GraphQL Analytics API's datasets are answered from (never raw per-request rows). Each
 * node adds its own counts under its node id (no two nodes write one row, so no contention), and a query sums the
 * nodes. A rollup row is one dataset's numbers for one scope (a zone or an account), one minute and one combination
 * of dimension values (up to five, `d1`..`d5`), with a count and up to eight sums (`s1`..`s8`).
 */
export interface RollupRow {
  dataset: string;
  /** The zone or account the numbers belong to. */
  scope: string;
  /** The account that owns the scope (a zone's account): what deleting an account's data goes by. */
  accountId: string;
  /** Unix seconds of the minute's start. */
  minute: number;
  /** Dimension values, at most five ("" for a dimension a dataset does not use). */
  dims: readonly string[];
  count: number;
  /** Sums, at most eight (0 for a sum a dataset does not use). */
  sums: readonly number[];
}

export const DIMENSIONS = 5;
export const SUMS = 8;

/** How the rows of a query are grouped: by a dimension column, or by a time bucket of the minute. */
export type RollupGroup = { dim: number } | { time: "minute" | "five_minutes" | "fifteen_minutes" | "hour" | "day" };

/** One query of a dataset for one scope. */
export interface RollupQuery {
  dataset: string;
  scope: string;
  /** Unix seconds: minute ≥ from and minute < to. */
  from: number;
  to: number;
  /** Filters on dimension columns (index 0..4): equal, not equal, or one of a few values. */
  where: readonly ({ dim: number; op: "eq" | "neq"; value: string } | { dim: number; op: "in"; values: readonly string[] })[];
  groupBy: readonly RollupGroup[];
  /** Ordering on a group's position in `groupBy`, on the count or on a sum (index 0..7); stable within equal values. */
  orderBy: readonly { by: { group: number } | { sum: number } | "count"; desc: boolean }[];
  limit: number;
  /** The sum columns (0..7) to add up (besides those it orders by); the others read 0. All of them when unset. */
  sums?: readonly number[];
}

/** One group: the values of `groupBy` in order (a time bucket as Unix seconds, a dimension as its text), the count and sums. */
export interface RollupGroupRow {
  keys: (string | number)[];
  count: number;
  sums: number[];
}

export interface RollupStore {
  /** Adds the rows' counts and sums to what this node recorded for the same keys. */
  add(nodeId: string, rows: readonly RollupRow[]): Promise<void>;
  query(q: RollupQuery): Promise<RollupGroupRow[]>;
  /** Deletes every row of minutes before `before` (Unix seconds); returns how many. */
  prune(before: number): Promise<number>;
  /** Deletes a scope's rows (a deleted zone's). */
  deleteScope(scope: string): Promise<void>;
}
