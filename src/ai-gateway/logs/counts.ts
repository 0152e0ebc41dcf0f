import type { Gateway } from "../gateways/store.js";
import type { LogCount, LogStore } from "./store.js";

/**
 * How many logs each gateway with a log limit holds, in memory, so that the proxy knows without waiting whether a
 * STOP_INSERTING gateway is full (and then neither promises nor writes a log). Filled from the store on first need
 * and from what each batch write answers; forgotten when logs are deleted or the gateway changes.
 */
export class LogCounts {
  private readonly counts = new Map<string, number>();
  /** Moves when a count is forgotten, so an answer that was on its way then does not bring it back stale. */
  private generation = 0;

  constructor(private readonly store: LogStore) {}

  /** Whether the gateway takes no more logs: known at once, except the first time (then the store is asked). */
  isFull(g: Gateway): boolean | Promise<boolean> {
    const limit = g.log_management;
    if (limit === null || g.log_management_strategy === "DELETE_OLDEST") return false;
    const n = this.counts.get(`${g.account_id}/${g.id}`);
    return n === undefined ? this.load(g.account_id, g.id).then((count) => count >= limit) : n >= limit;
  }

  private async load(accountId: string, gatewayId: string): Promise<number> {
    const generation = this.generation;
    const n = await this.store.count(accountId, gatewayId);
    if (generation === this.generation) this.counts.set(`${accountId}/${gatewayId}`, n);
    return n;
  }

  /** The mark to hand back to `update` with the counts of a write that starts now. */
  mark(): number {
    return this.generation;
  }

  update(counts: readonly LogCount[], mark: number): void {
    if (mark !== this.generation) return;
    for (const c of counts) this.counts.set(`${c.account_id}/${c.gateway_id}`, c.count);
  }

  forget(accountId: string, gatewayId: string): void {
    this.generation++;
    this.counts.delete(`${accountId}/${gatewayId}`);
  }

  forgetAll(): void {
    this.generation++;
    this.counts.clear();
  }
}
