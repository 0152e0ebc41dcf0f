import * as packet from "dns-packet";
import type { AnswerEngine, Rr } from "./answer.js";
import type { ZoneState } from "../zones/zone-state.js";
import { encodeQuestion, encodeRr } from "./wire-codecs.js";
import { signedTransfer } from "../dnssec/zone-transfer.js";

const AA = 1 << 10;
/** Records per transfer message, which keeps each well under the 64 KiB TCP message limit. */
const PER_MESSAGE = 200;
/** Bytes of records per message, leaving room for the header, the question and a TSIG record. */
const MESSAGE_BYTES = 16_000;

/**
 * The records a secondary receives: what our own server would answer. Proxied names carry the edge
 * addresses (never the origin), and a flattened apex CNAME is sent as the addresses it resolves to,
 * since a CNAME beside the SOA is not a valid zone.
 */
function transferRecords(engine: AnswerEngine, zs: ZoneState): Rr[] {
  const out: Rr[] = [];
  for (const [name, recs] of zs.byName) {
    const flattenedApex = name === zs.zone.name && recs.some((r) => r.type === "CNAME");
    if (engine.isProxied(zs, recs) || flattenedApex) {
      for (const t of ["A", "AAAA"] as const) out.push(...(engine.answer(name, t)?.answers.filter((a) => a.name === name) ?? []));
      for (const r of recs) if (r.type !== "A" && r.type !== "AAAA" && r.type !== "CNAME") out.push(engine.rr(r, name));
      continue;
    }
    for (const r of recs) if (!(name === zs.zone.name && r.type === "NS")) out.push(engine.rr(r, name));
  }
  return out;
}

/** Everything a secondary holds of the zone but the SOA: the apex NS and every record as served. */
export function zoneContent(engine: AnswerEngine, zs: ZoneState): Rr[] {
  return [...engine.apexNs(zs), ...transferRecords(engine, zs)];
}

/**
 * AXFR (RFC 5936): SOA, everything, SOA again, over as many messages as needed. A signed zone goes with its DNSKEY
 * set, an NSEC chain and every RRSIG, so the secondary serves a copy resolvers validate (dnssec/zone-transfer.ts).
 */
export function axfrMessages(engine: AnswerEngine, zs: ZoneState, q: ReturnType<typeof packet.decode>): Buffer[] {
  const soa = engine.soaRr(zs);
  const signed = engine.signingOf(zs);
  const body = signed
    ? signedTransfer(zs.zone.name, soa, zoneContent(engine, zs), signed.signing, signed.signer, engine.negativeTtl(zs))
    : [soa, ...zoneContent(engine, zs)];
  return transferMessages([...body, soa], q);
}

/** A record in wire form (no name compression, so the same record is always the same bytes). */
export const wireRr = (r: Rr): Buffer => encodeRr(r as packet.Answer);

/**
 * A transfer's records (dns-packet objects or wire bytes) as response messages to `q`, built at the wire level (the
 * question once, then records) and cut by size, so each message stays well under the 64 KiB TCP limit.
 */
export function transferMessages(all: readonly (Rr | Buffer)[], q: ReturnType<typeof packet.decode>): Buffer[] {
  const question = q.questions?.length ? encodeQuestion(q.questions[0]) : Buffer.alloc(0);
  const out: Buffer[] = [];
  let rrs: Buffer[] = [];
  let size = 0;
  const flush = () => {
    const header = Buffer.alloc(12);
    header.writeUInt16BE(q.id ?? 0, 0);
    header.writeUInt16BE(0x8000 | AA, 2);
    header.writeUInt16BE(out.length === 0 && question.length ? 1 : 0, 4);
    header.writeUInt16BE(rrs.length, 6);
    out.push(Buffer.concat([header, ...(out.length === 0 ? [question] : []), ...rrs]));
    rrs = [];
    size = 0;
  };
  for (const r of all) {
    const b = Buffer.isBuffer(r) ? r : wireRr(r);
    if (rrs.length > 0 && (size + b.length > MESSAGE_BYTES || rrs.length >= PER_MESSAGE)) flush();
    rrs.push(b);
    size += b.length;
  }
  if (rrs.length || out.length === 0) flush();
  return out;
}
