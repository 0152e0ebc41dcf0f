import { BlockList } from "node:net";
import type * as packet from "dns-packet";
import type { DnsRecord, RecordType, Soa } from "../model.js";
import { TYPES, type RecordValue } from "../records/types.js";
import { canonical, isInZone } from "../zones/names.js";

/** A record as a primary sent it, in the platform's terms: what a secondary zone stores and serves. */
export type IncomingRecord = Pick<DnsRecord, "name" | "type" | "content" | "data" | "priority" | "ttl">;

/** The primary's addresses are its business: a secondary zone's records are not checked against the platform's ranges. */
const NO_PLATFORM_RANGES = new BlockList();

/** Records of a signed primary: its signatures cannot be served for answers we build, so the zone is served unsigned. */
const DNSSEC_TYPES = new Set(["RRSIG", "NSEC", "NSEC3", "NSEC3PARAM", "DNSKEY", "CDS", "CDNSKEY", "TSIG", "OPT"]);

const hex = (b: unknown) => (Buffer.isBuffer(b) ? b.toString("hex") : String(b));
const quoted = (b: Buffer) => `"${b.toString("latin1").replace(/[\\"]/g, (c) => `\\${c}`)}"`;

/** What the API would be given for a record of each type, from dns-packet's decoded data. */
const BODIES: Partial<Record<string, (d: any) => { content?: unknown; data?: unknown; priority?: unknown }>> = {
  A: (d) => ({ content: d }),
  AAAA: (d) => ({ content: d }),
  CNAME: (d) => ({ content: d }),
  NS: (d) => ({ content: d }),
  PTR: (d) => ({ content: d }),
  MX: (d) => ({ content: d.exchange || ".", priority: d.preference }),
  TXT: (d) => ({ content: (d as Buffer[]).map(quoted).join(" ") }),
  SRV: (d) => ({ data: { priority: d.priority, weight: d.weight, port: d.port, target: d.target || "." } }),
  CAA: (d) => ({ data: { flags: d.flags, tag: d.tag, value: d.value } }),
  DS: (d) => ({ data: { key_tag: d.keyTag, algorithm: d.algorithm, digest_type: d.digestType, digest: hex(d.digest) } }),
  SSHFP: (d) => ({ data: { algorithm: d.algorithm, type: d.hash, fingerprint: d.fingerprint } }),
  TLSA: (d) => ({ data: { usage: d.usage, selector: d.selector, matching_type: d.matchingType, certificate: hex(d.certificate) } }),
  NAPTR: (d) => ({
    data: { order: d.order, preference: d.preference, flags: d.flags, service: d.services, regex: d.regexp, replacement: d.replacement || "." },
  }),
};

/**
 * A record a primary sent, as the zone stores it; `undefined` with the reason when it is not kept: DNSSEC records
 * (RRSIG, NSEC, DNSKEY...: the zone is served unsigned), a type the platform does not store (HINFO, LOC, SVCB...),
 * a value its type's rules refuse, or a name outside the zone.
 */
export function incomingRecord(rr: packet.Answer, zone: string): { record: IncomingRecord } | { skipped: string } {
  const name = canonical(rr.name);
  if (!isInZone(name, zone)) return { skipped: `${rr.name}: outside the zone` };
  if (DNSSEC_TYPES.has(rr.type)) return { skipped: `${rr.type}: DNSSEC records of the primary are not served (the zone is served unsigned)` };
  const body = BODIES[rr.type];
  if (!body) return { skipped: `${rr.type}: not a type this platform stores` };
  const type = rr.type as RecordType;
  let value: RecordValue;
  try {
    value = TYPES[type].parse(body((rr as { data: unknown }).data), NO_PLATFORM_RANGES);
  } catch (err) {
    return { skipped: `${name} ${type}: ${(err as Error).message}` };
  }
  return { record: { name, type, ...value, ttl: (rr as { ttl?: number }).ttl ?? 0 } };
}

/** A SOA record's fields as the zone keeps them (its TTL is the SOA's own). */
export function soaOf(rr: packet.Answer): { serial: number; soa: Soa } {
  const d = (rr as { data: packet.SoaData }).data;
  return {
    serial: d.serial ?? 0,
    soa: {
      mname: canonical(d.mname),
      rname: canonical(d.rname),
      refresh: d.refresh ?? 0,
      retry: d.retry ?? 0,
      expire: d.expire ?? 0,
      min_ttl: d.minimum ?? 0,
      ttl: (rr as { ttl?: number }).ttl ?? 0,
    },
  };
}

/** What identifies a record's value (TTL aside: an IXFR removes a record by name, type and data). */
export const recordKey = (r: Pick<DnsRecord, "name" | "type" | "content" | "data" | "priority">) =>
  JSON.stringify([r.name, r.type, r.content, r.priority, r.data]);
