import type { ZoneState } from "../zones/zone-state.js";
import type { Answer, Rr } from "./answer.js";

/** RFC 9824's NXNAME pseudo-type (128): in an NSEC at a name, it says the name does not exist. As dns-packet names it. */
export const NXNAME = "UNKNOWN_128";

/** A zone's content by owner name (the SOA apart), each name's records built when asked for (axfr.ts). */
export interface ContentByName {
  names: readonly string[];
  recordsAt(i: number): Rr[];
}

/**
 * What the nameserver asks of DNSSEC: the answer engine decides what an answer holds (its denials included), DNSSEC
 * keeps the keys and makes the signatures. src/dns/dnssec/answer-signing.ts implements it and service.ts hands it to
 * the engine, so the nameserver never imports dnssec/ (as Knot's online signing is a module its query processing
 * calls). None handed over: no zone is signed.
 */
export interface AnswerSigning {
  /** Whether the zone is signed: its answers to queries with the DO bit carry signatures and NSEC denials. */
  isSigned(zoneId: string): boolean;
  /** The DNSKEY set a signed zone answers at its apex `owner` (the platform's keys); none for an unsigned zone. */
  dnskeys(zoneId: string, owner: string): Rr[];
  /** Adds the RRSIGs of a finished answer's authoritative RRsets, each by the zone it belongs to. */
  signAnswer(res: Answer): void;
  /**
   * A signed zone's transfer: the SOA first (not repeated at the end), its records, DNSKEY set, NSEC chain and RRSIGs,
   * produced as the caller iterates; undefined when the zone is not signed.
   */
  signedTransfer(zs: ZoneState, soa: Rr, content: ContentByName, negativeTtl: number): Iterable<Rr> | undefined;
}
