import type { Bus, BusEvent, BusHandler } from "../../core/cluster/bus.js";

/**
 * An edge thread's bus: the main thread relays every notice of the areas the tenant path keeps (zones, settings,
 * Cache Rules, Workers' routes, purges), numbered; the thread's subscribers apply them as a node's do, and once their
 * work on notice n and on every one before it is done, `applied(n)` is called (the main thread waits for it before
 * the API answers). The thread changes nothing, so it never publishes.
 */
export class ThreadBus implements Bus {
  private readonly byArea = new Map<string, Set<BusHandler>>();
  private work: Promise<unknown> = Promise.resolve();
  /** The last notice applied, with every one before it. */
  appliedUpTo: number;

  constructor(
    readonly nodeId: string,
    private readonly applied: (n: number) => void,
    /** The number of the last notice relayed before this thread started (what it reads includes them). */
    startAt = 0,
  ) {
    this.appliedUpTo = startAt;
  }

  deliver(n: number, event: BusEvent): void {
    const targets = event.type === "change" ? [this.byArea.get(event.area) ?? []] : [...this.byArea.values()];
    const started: unknown[] = [this.work];
    for (const set of targets)
      for (const handler of set) {
        try {
          started.push(handler(event));
        } catch {
          // A handler's failure is its own to log; the notice counts as applied (as on a node's bus).
        }
      }
    this.work = Promise.allSettled(started).then(() => {
      this.appliedUpTo = n;
      this.applied(n);
    });
  }

  /**
   * Whether every notice relayed so far (`relayed`, the main thread's shared count, which counts a notice from the
   * moment it is sent) is applied here: until it is, the thread serves nothing itself.
   */
  current(relayed: Int32Array): boolean {
    // In 32-bit arithmetic, as the shared count wraps after 2^31 notices: behind while the difference is positive.
    return ((Atomics.load(relayed, 0) - (this.appliedUpTo | 0)) | 0) <= 0;
  }

  async publish(area: string): Promise<void> {
    throw new Error(`an edge thread changes nothing, so it announces nothing (area ${area})`);
  }

  subscribe(area: string, handler: BusHandler): () => void {
    let set = this.byArea.get(area);
    if (!set) this.byArea.set(area, (set = new Set()));
    set.add(handler);
    return () => set.delete(handler);
  }

  /** Every notice relayed so far is applied before the thread answers anything that reads it. */
  barrier(): Promise<void> {
    return this.work.then(() => undefined);
  }

  async close(): Promise<void> {}
}
