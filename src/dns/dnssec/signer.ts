import { createHash } from "node:crypto";
import type { Rr } from "../nameserver/answer.js";
import { ALGORITHM, signData, type SigningKey } from "./keys.js";
import { nameWire, nameWireLength, rrWire } from "./wire.js";

/** Signatures start an hour in the past, for validators whose clocks run behind. */
const INCEPTION_SKEW_S = 3600;
/** Signatures are valid for 14 days... */
const VALIDITY_S = 14 * 86400;
/**
 * ...and never handed out (nor kept in any answer cache) once 7 days old: a resolver caching an answer at that
 * moment still has a week of validity left, far beyond any TTL served here (at most a day).
 */
export const REFRESH_AFTER_MS = 7 * 86400_000;
/** Signatures kept for reuse; past this the cache starts over (each is about 200 bytes plus its key). */
const CACHE_LIMIT = 200_000;

/** Types whose RDATA holds domain names that are lowercased in the canonical form (RFC 4034 §6.2, the ones served here). */
function canonicalData(rr: Rr): unknown {
  const d = rr.data;
  switch (rr.type) {
    case "NS":
    case "CNAME":
    case "PTR":
    case "DNAME":
      return (d as string).toLowerCase();
    case "MX": {
      const mx = d as { preference: number; exchange: string };
      return { ...mx, exchange: mx.exchange.toLowerCase() };
    }
    case "SOA": {
      const soa = d as { mname: string; rname: string };
      return { ...soa, mname: soa.mname.toLowerCase(), rname: soa.rname.toLowerCase() };
    }
    default:
      return d;
  }
}

/** The owner's labels as RRSIG counts them: without the root, and without a leading `*` (RFC 4034 §3.1.3). */
export function labelCount(owner: string): number {
  const labels = owner.split(".").filter(Boolean);
  return labels[0] === "*" ? labels.length - 1 : labels.length;
}

interface Cached {
  rrsig: Rr;
  signedAt: number;
}

/**
 * Makes RRSIGs for RRsets as they are answered (online signing), each signature kept for reuse keyed by the RRset's
 * canonical bytes and the key, so a name answered again costs no signing. Signatures are valid for 14 days and
 * replaced after 7 (`sweep`).
 */
export class RrsetSigner {
  private readonly cache = new Map<string, Cached>();
  /** The signing time of the oldest signature handed out since the answer caches were last emptied. */
  private oldestHandedOut: number | undefined;

  constructor(private readonly clock: () => number = Date.now) {}

  /**
   * The RRSIG of one RRset (every member has the same owner, type and class) by `key` for `zone`. The members'
   * TTLs must be equal (RFC 2181 §5.2): the caller sets them to their smallest first.
   */
  sign(zone: string, key: SigningKey, rrset: readonly Rr[]): Rr {
    const owner = rrset[0].name.toLowerCase();
    const ttl = rrset[0].ttl;
    const { type, rdatas } = canonicalRrset(owner, rrset);
    const ownerWire = nameWire(owner);
    const cacheKey = createHash("sha256")
      .update(`${zone}|${key.tag}|${key.publicKey.toString("base64")}|${owner}|${type}|${ttl}|`)
      .update(Buffer.concat(rdatas.flatMap((r) => [u16(r.length), r])))
      .digest("base64");
    const now = this.clock();
    const hit = this.cache.get(cacheKey);
    if (hit && now - hit.signedAt < REFRESH_AFTER_MS) return this.handOut(hit);

    const inception = Math.floor(now / 1000) - INCEPTION_SKEW_S;
    const expiration = inception + INCEPTION_SKEW_S + VALIDITY_S;
    const labels = labelCount(owner);
    const signer = nameWire(zone.toLowerCase());
    const head = Buffer.alloc(18);
    head.writeUInt16BE(type, 0);
    head[2] = ALGORITHM;
    head[3] = labels;
    head.writeUInt32BE(ttl, 4);
    head.writeUInt32BE(expiration >>> 0, 8);
    head.writeUInt32BE(inception >>> 0, 12);
    head.writeUInt16BE(key.tag, 16);
    // RFC 4034 §3.1.8.1: the RRSIG RDATA without the signature, then every RR of the set in canonical form and order.
    const rrHead = Buffer.alloc(8);
    rrHead.writeUInt16BE(type, 0);
    rrHead.writeUInt16BE(1, 2);
    rrHead.writeUInt32BE(ttl, 4);
    const signed = Buffer.concat([head, signer, ...rdatas.flatMap((r) => [ownerWire, rrHead, u16(r.length), r])]);
    const rrsig: Rr = {
      name: rrset[0].name,
      type: "RRSIG",
      class: "IN",
      ttl,
      data: {
        typeCovered: rrset[0].type,
        algorithm: ALGORITHM,
        labels,
        originalTTL: ttl,
        expiration: expiration >>> 0,
        inception: inception >>> 0,
        keyTag: key.tag,
        signersName: zone.toLowerCase(),
        signature: signData(key, signed),
      },
    };
    if (this.cache.size >= CACHE_LIMIT) this.cache.clear();
    const entry = { rrsig, signedAt: now };
    this.cache.set(cacheKey, entry);
    return this.handOut(entry);
  }

  /**
   * Forgets signatures due for replacement. True when an answer cached since the last sweep that said so may hold
   * one: the caller then empties every answer cache (they hold signatures inside finished answers), so no answer
   * older than REFRESH_AFTER_MS plus the sweep interval is ever served.
   */
  sweep(): boolean {
    const now = this.clock();
    if (this.oldestHandedOut === undefined || now - this.oldestHandedOut < REFRESH_AFTER_MS) return false;
    for (const [k, v] of this.cache) if (now - v.signedAt >= REFRESH_AFTER_MS) this.cache.delete(k);
    this.oldestHandedOut = undefined;
    return true;
  }

  /** Forgets every signature (keys changed). */
  clear(): void {
    this.cache.clear();
  }

  private handOut(c: Cached): Rr {
    if (this.oldestHandedOut === undefined || c.signedAt < this.oldestHandedOut) this.oldestHandedOut = c.signedAt;
    return c.rrsig;
  }
}

const u16 = (n: number) => {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(n);
  return b;
};

/** The type number and the RDATAs of an RRset in canonical form, sorted and without duplicates (RFC 4034 §6.3). */
function canonicalRrset(owner: string, rrset: readonly Rr[]): { type: number; rdatas: Buffer[] } {
  const nameLength = nameWireLength(owner);
  let type = 0;
  const rdatas: Buffer[] = [];
  for (const rr of rrset) {
    const wire = rrWire({ ...rr, name: owner, data: canonicalData(rr) });
    type = wire.readUInt16BE(nameLength);
    rdatas.push(wire.subarray(nameLength + 10));
  }
  rdatas.sort(Buffer.compare);
  return { type, rdatas: rdatas.filter((r, i) => i === 0 || !r.equals(rdatas[i - 1])) };
}
