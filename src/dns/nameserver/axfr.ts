import * as packet from "dns-packet";
import type { AnswerEngine, Rr } from "./answer.js";
import type { ZoneState } from "../zones/zone-state.js";
import type { DnsRecord } from "../model.js";
import { encodeQuestion, encodeRr } from "./wire-codecs.js";
import type { ContentByName } from "./signing.js";

const AA = 1 << 10;
/** Records per transfer message, which keeps each well under the 64 KiB TCP message limit. */
const PER_MESSAGE = 200;
/** Bytes of records per message, leaving room for the header, the question and a TSIG record. */
const MESSAGE_BYTES = 16_000;

/**
 * One version of a zone's content, taken when a transfer starts (RFC 5936: a transfer is a copy of one version) in a
 * walk over the owner names that copies nothing but references: the zone object (replaced whole on every change,
 * never mutated), and each name's record list with its length then. ZoneState only ever appends to a list in place
 * (a removal or a replacement makes a new list), so the first `length` records of a list are that version's for good.
 * The records are built from it later, in chunks, while the live zone changes.
 */
export interface ContentSnapshot {
  zone: ZoneState["zone"];
  /** The zone's `ipv6` setting then: off, proxied names are sent without the edge's AAAA, as they are answered. */
  ipv6: boolean;
  apexNs: Rr[];
  /** The flattened apex CNAME's addresses, resolved when the snapshot was taken. */
  flattenedApex?: Rr[];
  names: string[];
  lists: (readonly DnsRecord[])[];
  lengths: number[];
}

export function snapshotContent(engine: AnswerEngine, zs: ZoneState): ContentSnapshot {
  const zone = zs.zone;
  // Arrays of the final size, filled by forEach: pushing 200,000 entries into growing arrays (and the entry arrays a
  // for-of over a Map makes) cost 3-10 times as long (bench/dns/journal-axfr-turns.mjs, snapshot_walk_ms).
  const size = zs.byName.size;
  const names = new Array<string>(size);
  const lists = new Array<readonly DnsRecord[]>(size);
  const lengths = new Array<number>(size);
  let i = 0;
  zs.byName.forEach((recs, name) => {
    names[i] = name;
    lists[i] = recs;
    lengths[i++] = recs.length;
  });
  const apexCname = zs.at(zone.name).some((r) => r.type === "CNAME");
  const flattenedApex = apexCname
    ? (["A", "AAAA"] as const).flatMap((t) => engine.answer(zone.name, t)?.answers.filter((a) => a.name === zone.name) ?? [])
    : undefined;
  return { zone, ipv6: engine.edgeIpv6(zone.id), apexNs: engine.apexNs(zs), flattenedApex, names, lists, lengths };
}

/**
 * The records a secondary receives: what our own server would answer. Proxied names carry the edge
 * addresses (never the origin; no IPv6 ones while the zone's `ipv6` setting is off), and a flattened apex CNAME is sent as the addresses it resolves to,
 * since a CNAME beside the SOA is not a valid zone.
 */
export function* snapshotRecords(engine: AnswerEngine, snap: ContentSnapshot): Generator<Rr> {
  yield* snap.apexNs;
  for (let i = 0; i < snap.names.length; i++) yield* nameRecords(engine, snap, i);
}

/**
 * The records of the snapshot's `i`th name as a transfer sends them. What they are depends on that name's records
 * (its list up to the snapshot's length) and, zone-wide, on renderingOf(snap), snap.apexNs (the apex NS sent
 * apart, so stored apex NS are not repeated) and snap.flattenedApex: the IXFR journal relies on that list
 * (transfers/journal.ts).
 */
export function* nameRecords(engine: AnswerEngine, snap: ContentSnapshot, i: number): Generator<Rr> {
  const apex = snap.zone.name;
  const name = snap.names[i];
  const list = snap.lists[i];
  const recs = list.length === snap.lengths[i] ? list : list.slice(0, snap.lengths[i]);
  const proxied = engine.isProxied(snap, recs);
  const flattened = name === apex ? snap.flattenedApex : undefined;
  if (proxied || flattened) {
    if (flattened && !proxied) yield* flattened;
    else {
      yield* engine.edgeRrs(recs, name, "A");
      if (snap.ipv6) yield* engine.edgeRrs(recs, name, "AAAA");
    }
    for (const r of recs) if (r.type !== "A" && r.type !== "AAAA" && r.type !== "CNAME") yield engine.rr(r, name);
    return;
  }
  for (const r of recs) if (!(name === apex && r.type === "NS")) yield engine.rr(r, name);
}

/**
 * What of a snapshot changes how its names other than the apex are sent (nameRecords): the zone's name, paused and
 * type, and its `ipv6` setting; two versions that agree on this send each unchanged name alike. The serial,
 * modified_on and the SOA settings do not change them; flatten_all_cnames only changes answers (a transfer sends
 * non-apex CNAMEs as they are).
 */
export const renderingOf = (snap: Pick<ContentSnapshot, "zone" | "ipv6">): string =>
  JSON.stringify([snap.zone.name, snap.zone.paused, snap.zone.type ?? "full", snap.ipv6]);

/** Everything a secondary holds of the zone but the SOA: the apex NS and every record as served. */
export function zoneContent(engine: AnswerEngine, zs: ZoneState): Rr[] {
  return [...snapshotRecords(engine, snapshotContent(engine, zs))];
}

/**
 * AXFR (RFC 5936): SOA, everything, SOA again, over as many messages as needed, produced lazily: the zone's version is
 * taken now (snapshotContent), and each message is built from it when the caller asks for it (the TCP listener asks
 * for a few per turn of the event loop). A signed zone goes with its DNSKEY set, an NSEC chain and every RRSIG, so
 * the secondary serves a copy resolvers validate (dnssec/zone-transfer.ts): its names are put in canonical order when
 * the first message is asked for, and each is signed as its turn comes.
 */
export function axfrMessages(engine: AnswerEngine, zs: ZoneState, q: ReturnType<typeof packet.decode>): Iterable<Buffer> {
  const soa = engine.soaRr(zs);
  const snap = snapshotContent(engine, zs);
  const signed = engine.isSigned(zs) ? engine.signedTransfer(zs, soa, byName(engine, snap)) : undefined;
  return transferMessageStream(
    (function* () {
      if (signed) yield* signed;
      else {
        yield soa;
        yield* snapshotRecords(engine, snap);
      }
      yield soa;
    })(),
    q,
  );
}

/** The snapshot by owner name, the apex NS with the apex's records (the apex is there even when it holds none). */
function byName(engine: AnswerEngine, snap: ContentSnapshot): ContentByName {
  const apex = snap.zone.name;
  const names = snap.names.includes(apex) ? snap.names : [...snap.names, apex];
  return {
    names,
    recordsAt: (i) => [...(names[i] === apex ? snap.apexNs : []), ...(i < snap.names.length ? nameRecords(engine, snap, i) : [])],
  };
}

/** A record in wire form (no name compression, so the same record is always the same bytes). */
export const wireRr = (r: Rr): Buffer => encodeRr(r as packet.Answer);

/**
 * A transfer's records (dns-packet objects or wire bytes) as response messages to `q`, built at the wire level (the
 * question once, then records) and cut by size, so each message stays well under the 64 KiB TCP limit.
 */
export function transferMessages(all: readonly (Rr | Buffer)[], q: ReturnType<typeof packet.decode>): Buffer[] {
  return [...transferMessageStream(all, q)];
}

/** transferMessages, one message at a time as the caller iterates (records are read from `all` only as needed). */
export function* transferMessageStream(all: Iterable<Rr | Buffer>, q: ReturnType<typeof packet.decode>): Generator<Buffer> {
  const question = q.questions?.length ? encodeQuestion(q.questions[0]) : Buffer.alloc(0);
  let sent = 0;
  let rrs: Buffer[] = [];
  let size = 0;
  const message = () => {
    const header = Buffer.alloc(12);
    header.writeUInt16BE(q.id ?? 0, 0);
    header.writeUInt16BE(0x8000 | AA, 2);
    header.writeUInt16BE(sent === 0 && question.length ? 1 : 0, 4);
    header.writeUInt16BE(rrs.length, 6);
    const out = Buffer.concat([header, ...(sent === 0 ? [question] : []), ...rrs]);
    sent++;
    rrs = [];
    size = 0;
    return out;
  };
  for (const r of all) {
    const b = Buffer.isBuffer(r) ? r : wireRr(r);
    if (rrs.length > 0 && (size + b.length > MESSAGE_BYTES || rrs.length >= PER_MESSAGE)) yield message();
    rrs.push(b);
    size += b.length;
  }
  if (rrs.length || sent === 0) yield message();
}
