import type { Logger } from "../../core/logger.js";
import type { AnswerEngine } from "../nameserver/answer.js";
import type { Rr } from "../nameserver/answer.js";
import { nameRecords, renderingOf, snapshotContent, wireRr, type ContentSnapshot } from "../nameserver/axfr.js";
import type { ZoneState } from "../zones/zone-state.js";
import type { JournalEntry } from "./model.js";
import type { JournalBounds, TransferStore } from "./store.js";

/** What the journal keeps per zone unless told otherwise: enough for a secondary that missed a day of busy edits. */
export const DEFAULT_JOURNAL_BOUNDS: JournalBounds = { maxEntries: 1000, maxRecords: 100_000 };

/**
 * A zone as a secondary last could have seen it: its serial, SOA and content, taken cheaply (the names and references
 * to their record lists, as an AXFR takes its version: nameserver/axfr.ts). Records are built from it only for the names
 * a change touched (contentDifference).
 */
interface Snapshot {
  serial: number;
  soa: Buffer;
  content: ContentSnapshot;
}

const wireKey = (r: Rr) => wireRr(r).toString("latin1");

/**
 * What a secondary holding `before` must remove and add to hold `after` (records by wire bytes, as a transfer sends
 * them: nameRecords), encoding only the names that may differ. A name whose record list is the same list with the same
 * length in both is sent alike (ZoneState never changes a list but by appending to it, and never changes a record in
 * place), unless something zone-wide that shapes every name differs (renderingOf): then every name is compared. The
 * apex is always compared: its records also depend on the apex NS and the flattened apex CNAME's addresses.
 *
 * The walk pairs the names of the two versions in order. Both come from the zone's Map in insertion order, so an
 * unchanged name sits at the same place relative to the others: a removed name is parked (a Map of the few names
 * passed over), an added one is met after the versions' common names. Cost: O(names) reference comparisons, plus
 * encoding the changed names' records.
 */
export function contentDifference(engine: AnswerEngine, before: ContentSnapshot, after: ContentSnapshot): { removed: Buffer[]; added: Buffer[] } {
  const removed: Buffer[] = [];
  const added: Buffer[] = [];
  const apex = after.zone.name;
  const everyName = renderingOf(before) !== renderingOf(after);
  let apexBefore = -1;
  let apexAfter = -1;
  // One name's records in each version (-1: absent), compared as sets, as the secondary holds them.
  const compare = (b: readonly Rr[], a: readonly Rr[]) => {
    const was = new Set(b.map(wireKey));
    const is = new Set(a.map(wireKey));
    for (const k of was) if (!is.has(k)) removed.push(Buffer.from(k, "latin1"));
    for (const k of is) if (!was.has(k)) added.push(Buffer.from(k, "latin1"));
  };
  const visit = (bi: number, ai: number) => {
    const name = ai >= 0 ? after.names[ai] : before.names[bi];
    if (name === apex) {
      apexBefore = bi;
      apexAfter = ai;
      return;
    }
    if (!everyName && bi >= 0 && ai >= 0 && before.lists[bi] === after.lists[ai] && before.lengths[bi] === after.lengths[ai]) return;
    compare(bi >= 0 ? [...nameRecords(engine, before, bi)] : [], ai >= 0 ? [...nameRecords(engine, after, ai)] : []);
  };
  const parked = new Map<string, number>();
  let bi = 0;
  for (let ai = 0; ai < after.names.length;) {
    const name = after.names[ai];
    if (bi < before.names.length && before.names[bi] === name) visit(bi++, ai++);
    else if (parked.has(name)) {
      visit(parked.get(name)!, ai++);
      parked.delete(name);
    } else if (bi < before.names.length) parked.set(before.names[bi], bi++);
    else visit(-1, ai++);
  }
  for (; bi < before.names.length; bi++) visit(bi, -1);
  for (const b of parked.values()) visit(b, -1);
  const apexOf = (snap: ContentSnapshot, i: number) => [...snap.apexNs, ...(i >= 0 ? nameRecords(engine, snap, i) : [])];
  compare(apexOf(before, apexBefore), apexOf(after, apexAfter));
  return { removed, added };
}

/**
 * The IXFR journal (RFC 1995): for each serial change of a zone, which records a secondary must remove and add. The
 * difference is taken between what a transfer would send before and after the change, so synthesized records
 * (proxied names as edge addresses, flattened CNAMEs) and DNS settings changes are journaled exactly as sent.
 *
 * A zone is journaled once someone may hold a copy: from its first transfer since start, or from start when its
 * journal in the store continues to the zone's current serial. Each change is kept in memory (the server answers
 * IXFR synchronously) and in the store, within `bounds` per zone; older changes are dropped and a secondary that
 * asks from before them gets the whole zone (AXFR) instead.
 */
export class TransferJournal {
  private readonly snapshots = new Map<string, Snapshot>();
  private readonly entries = new Map<string, JournalEntry[]>();
  private writes: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly store: TransferStore,
    private readonly engine: AnswerEngine,
    private readonly log: Logger,
    private readonly bounds: JournalBounds = DEFAULT_JOURNAL_BOUNDS,
  ) {}

  /** Picks up the stored journals of the zones, dropping those that do not end at the zone's serial. */
  async load(zones: Iterable<ZoneState>): Promise<void> {
    for (const zs of zones) {
      const stored = await this.store.journal(zs.zone.id);
      if (stored.length === 0) continue;
      if (stored[stored.length - 1].to_serial !== zs.zone.serial) {
        await this.store.deleteJournal(zs.zone.id);
        continue;
      }
      this.entries.set(zs.zone.id, stored);
      this.snapshots.set(zs.zone.id, this.snapshot(zs));
    }
  }

  /** A transfer of the zone is being served: from now on its changes are journaled. */
  watch(zs: ZoneState): void {
    if (!this.snapshots.has(zs.zone.id)) this.snapshots.set(zs.zone.id, this.snapshot(zs));
  }

  /** Called after every change of a zone (records or settings): journals what changed for its secondaries. */
  changed(zs: ZoneState): void {
    const before = this.snapshots.get(zs.zone.id);
    if (!before || before.serial === zs.zone.serial) return;
    const after = this.snapshot(zs);
    this.snapshots.set(zs.zone.id, after);
    const { removed, added } = contentDifference(this.engine, before.content, after.content);
    const entry: JournalEntry = { from_serial: before.serial, to_serial: after.serial, from_soa: before.soa, to_soa: after.soa, removed, added };
    const list = [...(this.entries.get(zs.zone.id) ?? []), entry];
    // The same bounds as the store's, so memory and store drop the same changes.
    let records = 0;
    let keep = 0;
    for (let i = list.length - 1; i >= 0; i--) {
      records += list[i].removed.length + list[i].added.length;
      if (list.length - i > this.bounds.maxEntries || records > this.bounds.maxRecords) break;
      keep++;
    }
    this.entries.set(zs.zone.id, list.slice(list.length - keep));
    this.persist(() => this.store.appendJournal(zs.zone.id, entry, this.bounds), zs);
  }

  /** The zone is gone: so is its journal. */
  deleted(zoneId: string): void {
    this.snapshots.delete(zoneId);
    this.entries.delete(zoneId);
    this.persist(() => this.store.deleteJournal(zoneId));
  }

  /**
   * The records of an incremental transfer from `fromSerial` to the zone's current serial (RFC 1995 §4): the
   * current SOA, then for each change the old SOA, what it removed, the new SOA, what it added, and the current SOA
   * again. Only the current SOA when the secondary is up to date; undefined when the journal does not reach back
   * to `fromSerial` (the caller sends the whole zone).
   */
  incremental(zs: ZoneState, fromSerial: number): Buffer[] | undefined {
    const current = wireRr(this.engine.soaRr(zs));
    if (fromSerial === zs.zone.serial) return [current];
    // The journal holds unsigned differences; the signatures and NSEC chain of a signed zone go whole (AXFR).
    if (this.engine.isSigned(zs)) return undefined;
    // The zone's `ipv6` setting changed and its new serial is not here yet (it comes right after, from the node the
    // setting was changed on), or came before the setting (several nodes: two notices, read in either order): the
    // journal's last step does not hold what is sent now, and the whole zone goes.
    const last = this.snapshots.get(zs.zone.id);
    if (last && last.content.ipv6 !== this.engine.edgeIpv6(zs.zone.id)) return undefined;
    const list = this.entries.get(zs.zone.id) ?? [];
    const start = list.findIndex((e) => e.from_serial === fromSerial);
    if (start < 0 || list[list.length - 1].to_serial !== zs.zone.serial) return undefined;
    const out = [current];
    for (const e of list.slice(start)) out.push(e.from_soa, ...e.removed, e.to_soa, ...e.added);
    out.push(current);
    return out;
  }

  private snapshot(zs: ZoneState): Snapshot {
    return { serial: zs.zone.serial, soa: wireRr(this.engine.soaRr(zs)), content: snapshotContent(this.engine, zs) };
  }

  /** Store writes in order, in the background: a failure is logged, and costs only the IXFR (AXFR still works). */
  private persist(write: () => Promise<void>, zs?: ZoneState): void {
    this.writes = this.writes.then(write).catch((err) => this.log.warn({ err, zone: zs?.zone.name }, "could not write the IXFR journal"));
  }

  /** Resolves once every journal write so far is in the store. */
  flushed(): Promise<unknown> {
    return this.writes;
  }
}
