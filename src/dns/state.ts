import { randomBytes } from "node:crypto";
import type { DnsRecord, Zone, ZoneSettings } from "./model.js";
import { defaultZoneSettings } from "./soa.js";
import type { DnsStore } from "./store.js";

export const newId = () => randomBytes(16).toString("hex");
export const now = () => new Date().toISOString();

/** A serial only ever grows: the next one is one more, or the current UNIX time when that is larger. */
export const nextSerial = (serial: number) => Math.max(serial + 1, Math.floor(Date.now() / 1000));

/**
 * One zone in memory: its records by id and by owner name, and every name that exists (with empty
 * non-terminals, counted by descendants) so the server can tell NXDOMAIN from NODATA and apply
 * wildcards without SQL.
 */
export class ZoneState {
  readonly records = new Map<string, DnsRecord>();
  readonly byName = new Map<string, DnsRecord[]>();
  private readonly names = new Map<string, number>();

  constructor(public zone: Zone) {}

  /** Adds or replaces a record; a replaced record keeps its place in the zone's order. */
  put(r: DnsRecord): void {
    const old = this.records.get(r.id);
    if (old) this.unindex(old);
    this.records.set(r.id, r);
    const list = this.byName.get(r.name);
    if (list) list.push(r);
    else this.byName.set(r.name, [r]);
    for (const n of this.ancestry(r.name)) this.names.set(n, (this.names.get(n) ?? 0) + 1);
  }

  remove(id: string): void {
    const r = this.records.get(id);
    if (!r) return;
    this.records.delete(id);
    this.unindex(r);
  }

  private unindex(r: DnsRecord): void {
    const list = this.byName.get(r.name)!.filter((x) => x.id !== r.id);
    if (list.length) this.byName.set(r.name, list);
    else this.byName.delete(r.name);
    for (const n of this.ancestry(r.name)) {
      const c = (this.names.get(n) ?? 1) - 1;
      if (c > 0) this.names.set(n, c);
      else this.names.delete(n);
    }
  }

  /** Whether a name exists in the zone, as an owner or as an empty non-terminal. */
  exists(name: string): boolean {
    return name === this.zone.name || this.names.has(name);
  }

  at(name: string): readonly DnsRecord[] {
    return this.byName.get(name) ?? [];
  }

  /** The name and its ancestors down to (not including) the apex. */
  private *ancestry(name: string): Generator<string> {
    let n = name;
    while (n.length > this.zone.name.length) {
      yield n;
      n = n.slice(n.indexOf(".") + 1);
    }
  }
}

export type ChangeListener = (zone: ZoneState, kind: "records" | "settings" | "created" | "deleted") => void;

/** All zones, loaded once; every API write goes through here so the index is current when the call returns. */
export class DnsState {
  readonly byId = new Map<string, ZoneState>();
  readonly byName = new Map<string, ZoneState>();
  private readonly listeners: ChangeListener[] = [];

  constructor(readonly store: DnsStore) {
    for (const z of store.loadZones()) this.index(new ZoneState(z));
    for (const r of store.loadRecords()) this.byId.get(r.zone_id)?.put(r);
  }

  onChange(l: ChangeListener): void {
    this.listeners.push(l);
  }

  private emit(zs: ZoneState, kind: Parameters<ChangeListener>[1]): void {
    for (const l of this.listeners) l(zs, kind);
  }

  private index(zs: ZoneState): void {
    this.byId.set(zs.zone.id, zs);
    this.byName.set(zs.zone.name, zs);
  }

  /** The zone a name belongs to: the longest zone name it ends with. */
  zoneFor(name: string): ZoneState | undefined {
    let n = name;
    for (;;) {
      const z = this.byName.get(n);
      if (z) return z;
      const dot = n.indexOf(".");
      if (dot < 0) return undefined;
      n = n.slice(dot + 1);
    }
  }

  createZone(accountId: string, name: string, defaults: ZoneSettings | undefined): ZoneState {
    const t = now();
    const zone: Zone = {
      id: newId(),
      account_id: accountId,
      name,
      paused: false,
      created_on: t,
      modified_on: t,
      activated_on: t,
      serial: nextSerial(0),
      settings: structuredClone(defaults ?? defaultZoneSettings()),
    };
    this.store.writeZone(zone);
    const zs = new ZoneState(zone);
    this.index(zs);
    this.emit(zs, "created");
    return zs;
  }

  deleteZone(zs: ZoneState): void {
    this.store.deleteZone(zs.zone.id);
    this.byId.delete(zs.zone.id);
    this.byName.delete(zs.zone.name);
    this.emit(zs, "deleted");
  }

  updateZone(zs: ZoneState, patch: { paused?: boolean; settings?: ZoneSettings }): void {
    const zone: Zone = { ...zs.zone, ...patch, modified_on: now(), serial: nextSerial(zs.zone.serial) };
    this.store.writeZone(zone);
    zs.zone = zone;
    this.emit(zs, "settings");
  }

  /** Commits a validated draft: SQLite first (one transaction), then the in-memory index, then listeners. */
  commit(draft: ZoneDraft): void {
    const zs = draft.zone;
    if (draft.changes.size === 0) return;
    const upserts: DnsRecord[] = [];
    const deletes: string[] = [];
    for (const [id, r] of draft.changes) {
      if (r) upserts.push(r);
      else deletes.push(id);
    }
    const zone: Zone = { ...zs.zone, modified_on: now(), serial: nextSerial(zs.zone.serial) };
    this.store.writeZone(zone, upserts, deletes);
    zs.zone = zone;
    for (const [id, r] of draft.changes) {
      if (r) zs.put(r);
      else zs.remove(id);
    }
    this.emit(zs, "records");
  }

  /** Records at a name as committed, for names outside the zone being edited. */
  recordsAt(name: string, draft?: ZoneDraft): readonly DnsRecord[] | undefined {
    const zs = this.zoneFor(name);
    if (!zs) return undefined;
    if (draft && zs === draft.zone) return draft.at(name);
    return zs.at(name);
  }
}

/** Pending changes to one zone, seen on top of its committed records, so a batch validates as a whole. */
export class ZoneDraft {
  readonly changes = new Map<string, DnsRecord | null>();
  /** Changed records by owner name, so lookups stay cheap in a large import. */
  private readonly changedAt = new Map<string, Set<string>>();

  constructor(readonly zone: ZoneState) {}

  get(id: string): DnsRecord | undefined {
    return this.changes.has(id) ? (this.changes.get(id) ?? undefined) : this.zone.records.get(id);
  }

  at(name: string): DnsRecord[] {
    const out = this.zone.at(name).filter((r) => !this.changes.has(r.id));
    for (const id of this.changedAt.get(name) ?? []) out.push(this.changes.get(id)!);
    return out;
  }

  set(r: DnsRecord): void {
    this.forget(r.id);
    this.changes.set(r.id, r);
    const ids = this.changedAt.get(r.name);
    if (ids) ids.add(r.id);
    else this.changedAt.set(r.name, new Set([r.id]));
  }

  delete(id: string): void {
    this.forget(id);
    this.changes.set(id, null);
  }

  private forget(id: string): void {
    const prev = this.changes.get(id);
    if (prev) this.changedAt.get(prev.name)?.delete(id);
  }
}
