/** What the nameserver reads of a zone's serving state (the answer engine, the transfer responder). */
export interface ServedZones {
  /** false: the zone is answered SERVFAIL and not transferred out. */
  isServed(zoneId: string): boolean;
}

/**
 * Which zones are answered. Every zone is, but a secondary zone not transferred yet, or past its SOA expire, which
 * transfers/secondary.ts withholds (and then empties the answer caches). The state belongs to the zones
 * (ZoneService.serving), so it ends with the zone: nothing else keeps a set of zone ids beside them.
 */
export class ZoneServing implements ServedZones {
  private readonly withheld = new Set<string>();

  isServed(zoneId: string): boolean {
    return !this.withheld.has(zoneId);
  }

  /** Serves the zone, or withholds it; true when that changed. */
  setServed(zoneId: string, served: boolean): boolean {
    const was = !this.withheld.has(zoneId);
    if (served) this.withheld.delete(zoneId);
    else this.withheld.add(zoneId);
    return was !== served;
  }

  /** The zone is gone: a mark kept for it would outlive it. */
  forget(zoneId: string): void {
    this.withheld.delete(zoneId);
  }
}
