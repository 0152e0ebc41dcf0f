import type { Rr } from "../nameserver/answer.js";
import type { ContentByName } from "../nameserver/signing.js";
import { DNSKEY_TTL } from "./keys.js";
import type { ZoneSigning } from "./dnssec-service.js";
import type { RrsetSigner } from "./signer.js";
import { rrsetsOf, rrsetSignatures } from "./online.js";

/** Structured types go out under dns-packet's generic names (records/types.ts): these are DS and DNSKEY either way. */
const DS = new Set(["DS", "UNKNOWN_43"]);
const DNSKEY = new Set(["DNSKEY", "UNKNOWN_48"]);

/**
 * RFC 4034 §6.1 canonical order of names: label by label from the right (the root side), each label's lowercase
 * bytes compared as unsigned octets, a name before the names below it.
 */
export function canonicalCompare(a: string, b: string): number {
  const la = a.split(".").reverse();
  const lb = b.split(".").reverse();
  for (let i = 0; i < Math.min(la.length, lb.length); i++) {
    const c = Buffer.compare(Buffer.from(la[i].toLowerCase(), "latin1"), Buffer.from(lb[i].toLowerCase(), "latin1"));
    if (c !== 0) return c;
  }
  return la.length - lb.length;
}

/**
 * Indices of `names` in canonical order (canonicalCompare), sorted by one precomputed key per name (the labels from the
 * right, lowercase, joined by NUL, which sorts below every label byte) rather than by splitting both names on each of
 * the n·log n comparisons. Names with a NUL or a character past latin1 keep the slow comparison.
 */
export function canonicalOrder(names: readonly string[]): number[] {
  const order = names.map((_, i) => i);
  if (names.some((n) => /[^\x01-\xff]/.test(n))) return order.sort((a, b) => canonicalCompare(names[a], names[b]));
  const keys = names.map((n) => n.toLowerCase().split(".").reverse().join("\0"));
  return order.sort((a, b) => (keys[a] < keys[b] ? -1 : keys[a] > keys[b] ? 1 : 0));
}

/**
 * The records of a signed zone as a secondary must hold them to serve it signed by itself (RFC 4035 §2): the zone's
 * records as transferred, its DNSKEY set, a complete NSEC chain in canonical order (a secondary cannot make our
 * compact denials: it needs the chain to prove a name or type absent), and the RRSIG of every authoritative RRset.
 * Not signed, nor in the chain: names below a delegation (glue); at a delegation only its DS and NSEC are signed.
 * The SOA comes first and is not repeated at the end.
 *
 * Produced as the caller iterates, so a large zone is signed over many turns of the event loop: the names are put in
 * canonical order first (a sort, far cheaper than signing), then each name in turn gives its records, its NSEC and the
 * RRSIGs of both. A name's NSEC needs the next name of the chain, so each chain name goes out when the next one is
 * found; a delegation comes before the names below it in that order, so glue is known as glue when it is met.
 */
export function* signedTransfer(zone: string, soa: Rr, content: ContentByName, signing: ZoneSigning, signer: RrsetSigner, negativeTtl: number): Generator<Rr> {
  yield soa;
  const dnskeys: Rr[] = signing.dnskeys.map((data) => ({ name: zone, type: "DNSKEY", class: "IN", ttl: DNSKEY_TTL, data }));
  const cuts = new Set<string>();
  const belowCut = (name: string) => {
    for (let n = name; n !== zone && n.includes(".");) {
      n = n.slice(n.indexOf(".") + 1);
      if (cuts.has(n)) return true;
    }
    return false;
  };
  const withNsec = function* (name: string, rrs: Rr[], next: string): Generator<Rr> {
    const nsec: Rr = {
      name,
      type: "NSEC",
      class: "IN",
      ttl: negativeTtl,
      data: { nextDomain: next, rrtypes: [...new Set([...rrs.map((r) => r.type), "RRSIG", "NSEC"])] },
    };
    const cut = cuts.has(name);
    // Signed before the records go out: rrsetSignatures gives an RRset's members one TTL.
    const rrsigs = rrsetsOf([...rrs, nsec], (rr) => cut && !DS.has(rr.type) && rr.type !== "NSEC").flatMap((set) =>
      rrsetSignatures(set, zone, signing, signer),
    );
    for (const r of rrs) if (r !== soa) yield r;
    yield nsec;
    yield* rrsigs;
  };
  let first: string | undefined;
  let pending: { name: string; rrs: Rr[] } | undefined;
  for (const i of canonicalOrder(content.names)) {
    const name = content.names[i];
    let rrs = content.recordsAt(i);
    // The DNSKEY set of a signed zone is the platform's keys (stored DNSKEY records at the apex are not served then).
    if (name === zone) rrs = [soa, ...dnskeys, ...rrs.filter((r) => !DNSKEY.has(r.type))];
    if (rrs.length === 0) continue;
    const glue = belowCut(name);
    if (name !== zone && rrs.some((r) => r.type === "NS")) cuts.add(name);
    if (glue) {
      yield* rrs;
      continue;
    }
    if (pending) yield* withNsec(pending.name, pending.rrs, name);
    else first = name;
    pending = { name, rrs };
  }
  if (pending) yield* withNsec(pending.name, pending.rrs, first!);
}
