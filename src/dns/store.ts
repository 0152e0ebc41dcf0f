import type { DnsRecord, Zone, ZoneSettings } from "./model.js";

/** Changes to a zone's records, written with the zone in one transaction. */
export interface RecordChanges {
  /** Records to add, or to replace (by id). */
  upserts?: readonly DnsRecord[];
  /** Ids of records of the zone to remove. */
  deletes?: readonly string[];
}

/** Conditions on a zone write. */
export interface WriteCondition {
  /**
   * The serial of the zone the change was made against: when the stored zone has another one (a change made
   * through another node since), nothing is written and ZoneChangedError is thrown. Every write changes the serial,
   * so an equal serial means the change was validated against what is stored.
   */
  ifSerial?: number;
  /**
   * The most records the zone may hold after the change: a change that adds records past it is refused whole with
   * DnsErrors.recordQuota (one that removes records, or keeps their number, is not, so a zone already past a lowered
   * limit can still be edited and shrunk). Checked against the count of the zone's records kept with the zone and
   * updated in the same transaction, which writers of the zone take turns at on every node.
   */
  maxRecords?: number;
}

/** The zone changed in the store since the writer read it (WriteCondition.ifSerial); reload it and try again. */
export class ZoneChangedError extends Error {
  constructor(readonly zoneId: string) {
    super(`zone ${zoneId} changed in the store since it was read`);
  }
}

/** One page of a zone's records, and where the next one starts (undefined after the last). */
export interface RecordPage {
  records: DnsRecord[];
  next?: string;
}

/**
 * Durable state of the DNS area: zones, their records, and each account's defaults for new zones. Every method is
 * asynchronous so that a database server can implement it (sqlite-store.ts, pg-store.ts). The
 * answering index in memory (zones/zone-service.ts) is read from here once at start and then kept current by the
 * service from what it writes: no DNS query and no API read ever waits on the store.
 */
export interface DnsStore {
  /** Every zone, ordered by name. */
  listZones(): Promise<Zone[]>;
  getZone(id: string): Promise<Zone | undefined>;
  /** The ids of the zones named any of `names` (at most a hostname's labels of them), in no order. */
  zoneIdsNamed(names: readonly string[]): Promise<string[]>;
  /**
   * A zone's records in creation order (created_on, then id), at most `limit` of them, starting after the
   * position `after` that the previous page returned as `next`.
   */
  listRecords(zoneId: string, page?: { after?: string; limit?: number }): Promise<RecordPage>;
  /** Adds a zone; DnsErrors.zoneExists when another zone has its name. */
  createZone(zone: Zone): Promise<void>;
  /**
   * Writes what may change of a zone (paused, settings, serial, modified_on) and its record changes, deletes first,
   * in one transaction: all or nothing. DnsErrors.zoneNotFound when the zone is gone (and nothing is written);
   * ZoneChangedError when `condition.ifSerial` is not the stored serial.
   */
  updateZone(zone: Zone, changes?: RecordChanges, condition?: WriteCondition): Promise<void>;
  /** Removes a zone and all its records; false when there was no such zone. */
  deleteZone(id: string): Promise<boolean>;
  /** The account's defaults for new zones; undefined until set. */
  accountSettings(accountId: string): Promise<ZoneSettings | undefined>;
  putAccountSettings(accountId: string, settings: ZoneSettings): Promise<void>;
}
