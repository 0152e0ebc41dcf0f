/**
 * A node's per-zone copy (zone settings, Cache Rules) read again whole after a resync, while single zones keep
 * changing here (this node's writes, other nodes' notices): the whole read started first, so for a zone that
 * changed meanwhile it is older than what the node holds. `load` keeps the newer copy of those zones.
 */
export class ChangesDuringLoad {
  /** The zones changed since each running load began reading. */
  private readonly running = new Set<Set<string>>();

  /** Notes that the node's copy of a zone just changed (written or read again on its own). */
  changed(zoneId: string): void {
    for (const zones of this.running) zones.add(zoneId);
  }

  /** `read()`'s map, where every zone changed while it read keeps its entry in `current()` (or its absence). */
  async load<V>(read: () => Promise<Map<string, V>>, current: () => ReadonlyMap<string, V>): Promise<Map<string, V>> {
    const changed = new Set<string>();
    this.running.add(changed);
    try {
      const next = await read();
      const now = current();
      for (const zoneId of changed) {
        const kept = now.get(zoneId);
        if (kept === undefined) next.delete(zoneId);
        else next.set(zoneId, kept);
      }
      return next;
    } finally {
      this.running.delete(changed);
    }
  }
}
