import type { Rr } from "../server/answer.js";
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
 * The records of a signed zone as a secondary must hold them to serve it signed by itself (RFC 4035 §2): the zone's
 * records as transferred, its DNSKEY set, a complete NSEC chain in canonical order (a secondary cannot make our
 * compact denials: it needs the chain to prove a name or type absent), and the RRSIG of every authoritative RRset.
 * Not signed, nor in the chain: names below a delegation (glue); at a delegation only its DS and NSEC are signed.
 * `content` is the zone without its SOA; the answer starts with the SOA and does not repeat it at the end.
 */
export function signedTransfer(zone: string, soa: Rr, content: readonly Rr[], signing: ZoneSigning, signer: RrsetSigner, negativeTtl: number): Rr[] {
  const dnskeys: Rr[] = signing.dnskeys.map((data) => ({ name: zone, type: "DNSKEY", class: "IN", ttl: DNSKEY_TTL, data }));
  // The DNSKEY set of a signed zone is the platform's keys (stored DNSKEY records at the apex are not served then).
  const all = [soa, ...dnskeys, ...content.filter((r) => !(r.name === zone && DNSKEY.has(r.type)))];
  const byOwner = new Map<string, Rr[]>();
  for (const rr of all) {
    const list = byOwner.get(rr.name);
    if (list) list.push(rr);
    else byOwner.set(rr.name, [rr]);
  }
  const cuts = new Set([...byOwner].filter(([name, rrs]) => name !== zone && rrs.some((r) => r.type === "NS")).map(([name]) => name));
  const belowCut = (name: string) => {
    for (let n = name; n !== zone && n.includes(".");) {
      n = n.slice(n.indexOf(".") + 1);
      if (cuts.has(n)) return true;
    }
    return false;
  };
  const owners = [...byOwner.keys()].filter((n) => !belowCut(n)).sort(canonicalCompare);
  const nsecs: Rr[] = owners.map((name, i) => ({
    name,
    type: "NSEC",
    class: "IN",
    ttl: negativeTtl,
    data: { nextDomain: owners[(i + 1) % owners.length], rrtypes: [...new Set([...byOwner.get(name)!.map((r) => r.type), "RRSIG", "NSEC"])] },
  }));
  const out: Rr[] = [...all, ...nsecs];
  const unsigned = (rr: Rr) => belowCut(rr.name) || (cuts.has(rr.name) && !DS.has(rr.type) && rr.type !== "NSEC");
  const rrsigs = rrsetsOf(out, unsigned).flatMap((set) => rrsetSignatures(set, zone, signing, signer));
  return [...out, ...rrsigs];
}
