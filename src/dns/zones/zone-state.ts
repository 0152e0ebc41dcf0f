import { randomBytes } from "node:crypto";
import { DnsErrors } from "../errors.js";
import type { DnsRecord, Zone } from "../model.js";

export const newId = () => randomBytes(16).toString("hex");
export const now = () => new Date().toISOString();

/**
 * One zone in memory: its records by id and by owner name, and every name that exists (with empty
 * non-terminals, counted by descendants) so the server can tell NXDOMAIN from NODATA and apply
 * wildcards without SQL.
 */
export class ZoneState {
  // Not readonly: adopt() swaps them whole. Never assigned elsewhere.
  records = new Map<string, DnsRecord>();
  byName = new Map<string, DnsRecord[]>();
  private names = new Map<string, number>();

  constructor(public zone: Zone) {}

  /**
   * Takes `built`'s zone and records as its own, in one step: a large change (a secondary zone's transfer) is built
   * on the side over several turns of the event loop while this state keeps answering, then swapped in whole.
   */
  adopt(built: ZoneState): void {
    this.zone = built.zone;
    this.records = built.records;
    this.byName = built.byName;
    this.names = built.names;
  }

  /**
   * Adds or replaces a record; a replaced record keeps its place in the zone's order. A name's list is only ever
   * appended to in place (unindex makes a new one): a zone transfer's snapshot relies on that (nameserver/axfr.ts).
   */
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
    // Every writer passes here (the records API, imports, Custom Domains, certificate challenges): a name the wire
    // cannot carry would be served malformed in every answer and zone transfer that holds it.
    checkWireName(r.name);
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

/** Refuses an owner name DNS cannot encode: over 253 characters (255 bytes on the wire) or a label over 63. */
export function checkWireName(name: string): void {
  if (name.length > 253) throw DnsErrors.nameInvalid(`${name.slice(0, 40)}… is longer than 253 characters`);
  if (name.split(".").some((label) => label.length > 63)) throw DnsErrors.nameInvalid(`a label of ${name.slice(0, 40)}… is longer than 63 characters`);
}
