import type { Answer, Rr } from "../nameserver/answer.js";
import type { ZoneService } from "../zones/zone-service.js";
import type { ZoneSigning } from "./dnssec-service.js";
import type { RrsetSigner } from "./signer.js";

/** What the answer engine signs with: each zone's keys, and the signer that makes (and keeps) signatures. */
export interface ZoneSigner {
  signingFor(zoneId: string): ZoneSigning | undefined;
  readonly signer: RrsetSigner;
}

/**
 * Adds the RRSIGs of an answer's authoritative RRsets: every RRset of the answer section, and the SOA, NSEC and DS
 * of the authority section. Not signed (RFC 4035 §2.2): the NS of a delegation, and glue (the additional section).
 * Each RRset is signed by the zone it belongs to (a CNAME chain may cross zones; a DS belongs to the parent), with
 * its KSKs for the DNSKEY set and its ZSKs for the rest; RRsets of unsigned zones stay unsigned.
 */
export function signAnswer(res: Answer, zones: Pick<ZoneService, "zoneFor">, dnssec: ZoneSigner): void {
  res.answers.push(...signatures(res.answers, zones, dnssec, false));
  res.authorities.push(...signatures(res.authorities, zones, dnssec, true));
}

function signatures(section: Rr[], zones: Pick<ZoneService, "zoneFor">, dnssec: ZoneSigner, authority: boolean): Rr[] {
  const out: Rr[] = [];
  for (const set of rrsetsOf(section, (rr) => rr.type === "RRSIG" || (authority && rr.type === "NS"))) {
    const { name, type } = set[0];
    const owner = type === "DS" ? name.slice(name.indexOf(".") + 1) : name;
    const zs = zones.zoneFor(owner);
    const signing = zs && dnssec.signingFor(zs.zone.id);
    if (signing) out.push(...rrsetSignatures(set, zs.zone.name, signing, dnssec.signer));
  }
  return out;
}

/** Records grouped into RRsets (same owner and type), in the order each set first appears; `skip` leaves some out. */
export function rrsetsOf(rrs: readonly Rr[], skip: (rr: Rr) => boolean): Rr[][] {
  const sets = new Map<string, Rr[]>();
  for (const rr of rrs) {
    if (skip(rr)) continue;
    const key = `${rr.name}\0${rr.type}`;
    const set = sets.get(key);
    if (set) set.push(rr);
    else sets.set(key, [rr]);
  }
  return [...sets.values()];
}

/**
 * The RRSIGs of one RRset of `zone`: by its KSKs for the DNSKEY set, its ZSKs for the rest. RFC 2181 §5.2 wants one TTL
 * per RRset (flattened answers may gather different ones): the members get the smallest first.
 */
export function rrsetSignatures(set: Rr[], zone: string, signing: ZoneSigning, signer: RrsetSigner): Rr[] {
  const ttl = Math.min(...set.map((r) => r.ttl));
  for (const r of set) r.ttl = ttl;
  return (set[0].type === "DNSKEY" ? signing.ksks : signing.zsks).map((key) => signer.sign(zone, key, set));
}
