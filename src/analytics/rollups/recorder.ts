import type { Logger } from "../../core/logger.js";
import type { RollupRow, RollupStore } from "./store.js";

/** Bounds on what one node holds before a flush, so a flood of distinct values never grows memory or rows. */
export const RecorderLimits = {
  /** Distinct dimension combinations one scope may have in one minute of one dataset; past it they count as OTHER. */
  combinationsPerScopeMinute: 1_000,
  /** Rows held in memory between flushes, all scopes together; past it new combinations count as OTHER. */
  pendingRows: 100_000,
} as const;

/** The dimension values a combination past the bounds is counted under (documented in docs/observability.md). */
export const OTHER = "(other)";

type PendingRow = RollupRow & { count: number; sums: number[] };

/**
 * One dataset's combinations for one scope and minute: a tree of maps, one level per dimension value, whose leaves are
 * the rows. Looking a combination up walks the values the caller already holds (most are constants or cached
 * strings, their hashes kept), where a joined key would build and hash a new string on every request.
 */
interface ScopeMinute {
  /** One tree per number of dimensions (a dataset always gives the same number; kept apart all the same). */
  trees: Map<string, unknown>[];
  /** New combinations counted against `combinationsPerScopeMinute` in this flush window. */
  combinations: number;
}

/**
 * Adds up what one node sees, per dataset, scope, minute and dimension combination, and writes it to the rollup store
 * every `flushMs` (and when the node stops): the per-minute rollups the GraphQL datasets read. Recording is a few map
 * lookups on the request's path; the store is written off it.
 */
export class RollupRecorder {
  /** dataset → scope → minute → the combinations seen (rows also listed in `rows`, in the order they appeared). */
  private byDataset = new Map<string, Map<string, Map<number, ScopeMinute>>>();
  private rows: PendingRow[] = [];
  private timer?: NodeJS.Timeout;
  private flushing?: Promise<void>;

  constructor(
    private readonly store: RollupStore,
    private readonly nodeId: string,
    private readonly log: Logger,
    private readonly flushMs = 10_000,
  ) {}

  /** Counts `count` events (`sums` added) at `atMs` for `scope` (a zone or an account) owned by `accountId`. */
  add(dataset: string, scope: string, accountId: string, atMs: number, dims: readonly string[], sums: readonly number[], count = 1): void {
    const minute = Math.floor(atMs / 60_000) * 60;
    const bucket = this.scopeMinute(dataset, scope, minute);
    let row = find(bucket, dims);
    if (!row) {
      if (bucket.combinations >= RecorderLimits.combinationsPerScopeMinute || this.rows.length >= RecorderLimits.pendingRows) {
        dims = dims.map(() => OTHER);
        row = find(bucket, dims);
      } else bucket.combinations++;
      row ??= this.newRow(bucket, { dataset, scope, accountId, minute, dims: [...dims], count: 0, sums: sums.map(() => 0) });
    }
    row.count += count;
    for (let i = 0; i < sums.length; i++) row.sums[i] += sums[i];
  }

  private scopeMinute(dataset: string, scope: string, minute: number): ScopeMinute {
    let byScope = this.byDataset.get(dataset);
    if (!byScope) this.byDataset.set(dataset, (byScope = new Map()));
    let byMinute = byScope.get(scope);
    if (!byMinute) byScope.set(scope, (byMinute = new Map()));
    let bucket = byMinute.get(minute);
    if (!bucket) byMinute.set(minute, (bucket = { trees: [], combinations: 0 }));
    return bucket;
  }

  private newRow(bucket: ScopeMinute, row: PendingRow): PendingRow {
    let level = (bucket.trees[row.dims.length] ??= new Map());
    const last = row.dims.length - 1;
    for (let i = 0; i < last; i++) {
      let next = level.get(row.dims[i]) as Map<string, unknown> | undefined;
      if (!next) level.set(row.dims[i], (next = new Map()));
      level = next;
    }
    // A dataset without dimensions keeps its one row under "".
    level.set(last >= 0 ? row.dims[last] : "", row);
    this.rows.push(row);
    return row;
  }

  start(): void {
    this.timer = setInterval(() => void this.flush(), this.flushMs);
    this.timer.unref();
  }

  /** Writes what was recorded since the last flush (one flush at a time; a failed one keeps its rows for the next). */
  async flush(): Promise<void> {
    if (this.flushing) return this.flushing;
    if (this.rows.length === 0) return;
    const rows = this.rows;
    // Minutes are counted per flush window: a combination seen again after the flush counts against the bound anew,
    // which bounds rows per window, the thing that costs.
    this.rows = [];
    this.byDataset = new Map();
    this.flushing = this.store
      .add(this.nodeId, rows)
      .catch((err: unknown) => {
        this.log.warn({ err, rows: rows.length }, "analytics rollups not written; kept for the next flush");
        for (const r of rows) {
          const bucket = this.scopeMinute(r.dataset, r.scope, r.minute);
          const now = find(bucket, r.dims);
          if (!now) this.newRow(bucket, r);
          else {
            now.count += r.count;
            for (let i = 0; i < r.sums.length; i++) now.sums[i] += r.sums[i];
          }
        }
      })
      .finally(() => (this.flushing = undefined));
    return this.flushing;
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.flushing;
    await this.flush();
  }
}

/** The row of `dims` among a scope-minute's combinations, if it has one. */
function find(bucket: ScopeMinute, dims: readonly string[]): PendingRow | undefined {
  let level: Map<string, unknown> | undefined = bucket.trees[dims.length];
  if (dims.length === 0) return level?.get("") as PendingRow | undefined;
  const last = dims.length - 1;
  for (let i = 0; i < last && level; i++) level = level.get(dims[i]) as Map<string, unknown> | undefined;
  return level?.get(dims[last]) as PendingRow | undefined;
}
