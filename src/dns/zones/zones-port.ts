import type { EdgeError } from "../../core/errors.js";
import { DnsErrors } from "../errors.js";
import type { DnsRecord, RecordType } from "../model.js";
import type { RecordManager, ZoneService } from "./zone-service.js";
import { newId, now, type ZoneState } from "./zone-state.js";

/** A zone as another area names it: its id, name and account. */
export interface ZoneRef {
  id: string;
  name: string;
  accountId: string;
}

/** A record a platform feature makes in a tenant's zone and keeps (managedBy shows it read-only in the records API). */
export interface ManagedRecordInput {
  /** The record's id; a new one when none is given. */
  id?: string;
  zoneId: string;
  name: string;
  type: RecordType;
  content: string;
  /** 1 is "automatic", as in the records API. */
  ttl: number;
  proxied: boolean;
}

/** The one place a record is made outside the records API: no comment, tags or settings, created and modified now. */
export function managedRecord(input: ManagedRecordInput): DnsRecord {
  const t = now();
  return {
    id: input.id ?? newId(),
    zone_id: input.zoneId,
    name: input.name,
    type: input.type,
    content: input.content,
    data: null,
    priority: null,
    ttl: input.ttl,
    proxied: input.proxied,
    comment: null,
    tags: [],
    settings: {},
    created_on: t,
    modified_on: t,
    comment_modified_on: null,
    tags_modified_on: null,
  };
}

/**
 * What DNS hands an area that routes tenants' hostnames and keeps records in their zones (workers: routes, Custom
 * Domains and their records, DNS-01 challenges): zones found by id, name or enclosing hostname, their changes, and
 * record edits through the zone service (stored, new serial, NOTIFY), records made by `record`.
 */
export interface ZonesPort {
  byId(zoneId: string): ZoneRef | undefined;
  byName(name: string): ZoneRef | undefined;
  /** The zone a hostname is answered from (the longest zone name it ends with), whichever account holds it. */
  enclosing(hostname: string): ZoneRef | undefined;
  /** Resolves once this node's zones hold every change committed before the call (ZoneService.upToDate). */
  upToDate(): Promise<void>;
  /**
   * Reads from the store a zone a request names (by id, by name, or a hostname in it) that this node does not know
   * yet: one made through another node whose notice did not arrive (ZoneService.catchUp). Known zones cost nothing.
   * Resolves to whether this node knows the zone now.
   */
  catchUp(named: { zoneId?: string; zoneName?: string; hostname?: string }): Promise<boolean>;
  /** The error a zone the caller cannot see answers with (the DNS routes' own). */
  zoneNotFound(): EdgeError;
  get(zoneId: string): ZoneState | undefined;
  zoneFor(hostname: string): ZoneState | undefined;
  editRecords: ZoneService["editRecords"];
  addRecordManager(manager: RecordManager): void;
  onChange(listener: Parameters<ZoneService["onChange"]>[0]): void;
  load(): Promise<void>;
  record: typeof managedRecord;
}

/** The longest hostname DNS carries; a longer one is in no zone, and is not looked for. */
const MAX_HOSTNAME = 253;

/** `a.b.example` → `a.b.example`, `b.example`, `example`: the names of the zones that could hold it. */
function suffixesOf(hostname: string): string[] {
  const names = [hostname];
  for (let dot = hostname.indexOf("."); dot >= 0; dot = hostname.indexOf(".", dot + 1)) names.push(hostname.slice(dot + 1));
  return names;
}

export function zonesPort(zones: ZoneService): ZonesPort {
  const ref = (zs: ZoneState | undefined): ZoneRef | undefined => zs && { id: zs.zone.id, name: zs.zone.name, accountId: zs.zone.account_id };
  return {
    byId: (id) => ref(zones.get(id)),
    byName: (name) => ref(zones.named(name)),
    enclosing: (hostname) => ref(zones.zoneFor(hostname)),
    upToDate: () => zones.upToDate(),
    catchUp: async ({ zoneId, zoneName, hostname }) => {
      if (zoneId !== undefined) return (await zones.catchUp(zoneId)) !== undefined;
      if (zoneName !== undefined) {
        await zones.catchUpNamed([zoneName]);
        return zones.named(zoneName) !== undefined;
      }
      if (hostname === undefined || hostname.length > MAX_HOSTNAME) return false;
      if (!zones.zoneFor(hostname)) await zones.catchUpNamed(suffixesOf(hostname));
      return zones.zoneFor(hostname) !== undefined;
    },
    zoneNotFound: () => DnsErrors.zoneNotFound(),
    get: (id) => zones.get(id),
    zoneFor: (hostname) => zones.zoneFor(hostname),
    editRecords: (zs, change) => zones.editRecords(zs, change),
    addRecordManager: (m) => zones.addRecordManager(m),
    onChange: (l) => zones.onChange(l),
    load: () => zones.load(),
    record: managedRecord,
  };
}
