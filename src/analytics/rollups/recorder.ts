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

/**
 * Adds up what one node sees, per dataset, scope, minute and dimension combination, and writes it to the rollup store
 * every `flushMs` (and when the node stops): the per-minute rollups the GraphQL datasets read. Recording is a map
 * update on the request's path; the store is written off it.
 */
export class RollupRecorder {
  private pending = new Map<string, RollupRow & { count: number; sums: number[] }>();
  private combinations = new Map<string, number>();
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
    const scopeMinute = `${dataset}\u0000${scope}\u0000${minute}`;
    let key = `${scopeMinute}\u0000${dims.join("\u0000")}`;
    let row = this.pending.get(key);
    if (!row) {
      const seen = this.combinations.get(scopeMinute) ?? 0;
      if (seen >= RecorderLimits.combinationsPerScopeMinute || this.pending.size >= RecorderLimits.pendingRows) {
        dims = dims.map(() => OTHER);
        key = `${scopeMinute}\u0000${dims.join("\u0000")}`;
        row = this.pending.get(key);
      } else this.combinations.set(scopeMinute, seen + 1);
      if (!row) {
        row = { dataset, scope, accountId, minute, dims: [...dims], count: 0, sums: sums.map(() => 0) };
        this.pending.set(key, row);
      }
    }
    row.count += count;
    for (let i = 0; i < sums.length; i++) row.sums[i] += sums[i];
  }

  start(): void {
    this.timer = setInterval(() => void this.flush(), this.flushMs);
    this.timer.unref();
  }

  /** Writes what was recorded since the last flush (one flush at a time; a failed one keeps its rows for the next). */
  async flush(): Promise<void> {
    if (this.flushing) return this.flushing;
    if (this.pending.size === 0) return;
    const rows = [...this.pending.values()];
    this.pending = new Map();
    // Minutes are counted per flush window: a combination seen again after the flush counts against the bound anew,
    // which bounds rows per window, the thing that costs.
    this.combinations = new Map();
    this.flushing = this.store
      .add(this.nodeId, rows)
      .catch((err: unknown) => {
        this.log.warn({ err, rows: rows.length }, "analytics rollups not written; kept for the next flush");
        for (const r of rows) {
          const key = `${r.dataset}\u0000${r.scope}\u0000${r.minute}\u0000${r.dims.join("\u0000")}`;
          const now = this.pending.get(key);
          if (!now) this.pending.set(key, r);
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
