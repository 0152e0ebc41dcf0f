import { inZone } from "./pattern.js";
import type { DomainRecords } from "./dns-records.js";
import type { RoutesStore } from "./store.js";

/**
 * Moves Custom Domains whose hostname is now answered from another zone of their account to that zone, with their
 * record (dns-records.ts repair): at start, and when a zone is created inside one of the account's zones.
 */
export class DomainRehoming {
  constructor(
    private readonly store: RoutesStore,
    private readonly records: DomainRecords,
    /** Reads the routes again (routing/table.ts) once a domain was stored with its new zone. */
    private readonly reload: () => Promise<void>,
  ) {}

  /** All domains, or those whose hostname is inside `zoneName` (a zone just created). */
  async run(zoneName?: string): Promise<void> {
    const all = await this.store.allDomains();
    const domains = zoneName === undefined ? all : all.filter((d) => inZone(d.hostname, zoneName));
    const moved = await this.records.repair(domains, async (d, zone) => {
      await this.store.putDomain({ ...d, zoneId: zone.zone.id, zoneName: zone.zone.name }, true);
    });
    if (moved > 0) await this.reload();
  }
}
