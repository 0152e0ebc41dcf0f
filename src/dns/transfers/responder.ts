import { BlockList, isIPv6 } from "node:net";
import * as packet from "dns-packet";
import type { Logger } from "../../core/logger.js";
import { Rcode, type AnswerEngine } from "../nameserver/answer.js";
import { axfrMessages, transferMessages } from "../nameserver/axfr.js";
import { LogThrottle } from "../log-throttle.js";
import type { ZoneState } from "../zones/zone-state.js";
import type { ServedZones } from "../zones/serving.js";
import type { TransferQueries } from "../nameserver/transfer-queries.js";
import type { TransferDirectory } from "./directory.js";
import type { TransferJournal } from "./journal.js";
import { refusalReply, sign, StreamSigner, verifyRequest, type TsigKey } from "../nameserver/tsig.js";
import { sameAddress } from "../nameserver/addresses.js";

type Decoded = ReturnType<typeof packet.decode>;

const REFUSED_LOG_INTERVAL_MS = 10_000;

/** Who may transfer a zone, and with which key the answer is signed. */
type Permit = { allowed: true; key?: TsigKey } | { allowed: false; why: string };

/**
 * Answers AXFR and IXFR over TCP. Who may transfer a zone:
 * - a zone with outgoing transfers configured through the API: only its peers' addresses, and a peer with a TSIG key
 *   only with a request signed by that key (unsigned from that address is refused, even from loopback); a disabled
 *   configuration transfers to nobody;
 * - any other zone: the --axfr-allow ranges (and --notify targets), as before; a signed request there must be
 *   signed by a TSIG key of the zone's account.
 * A signed request whose key is unknown, whose MAC is wrong or whose time is off gets NOTAUTH with the TSIG error
 * (BADKEY, BADSIG, BADTIME); a signed request that is allowed gets every message of its answer signed.
 */
export class TransferResponder implements TransferQueries {
  private readonly refusals = new LogThrottle(REFUSED_LOG_INTERVAL_MS);

  constructor(
    private readonly engine: AnswerEngine,
    private readonly served: ServedZones,
    private readonly directory: TransferDirectory,
    private readonly journal: TransferJournal,
    private readonly axfrAllow: BlockList,
    private readonly log: Logger,
  ) {}

  /**
   * The messages answering one AXFR or IXFR query (`msg` as received, `q` decoded) for zone `zs` (undefined: not ours):
   * an AXFR's are produced (and TSIG-signed, in order) as the caller iterates them, from the zone's version at this call.
   */
  answer(zs: ZoneState | undefined, q: Decoded, msg: Buffer, remote: string): Buffer[] | Iterable<Buffer> {
    const question = q.questions![0];
    if (!zs) {
      this.refused(question.name, remote, "zone transfer for unknown zone refused");
      return [errorReply(q, Rcode.NOTAUTH)];
    }
    // A secondary zone not transferred yet, or expired, has nothing it may hand on.
    if (!this.served.isServed(zs.zone.id)) return [errorReply(q, Rcode.SERVFAIL)];
    const keys = this.keysFor(zs);
    let verified: ReturnType<typeof verifyRequest>;
    try {
      verified = verifyRequest(msg, (name) => keys.find((k) => k.name === name));
    } catch {
      return [errorReply(q, Rcode.FORMERR)];
    }
    if (verified.status === "refused") {
      this.refused(zs.zone.name, remote, "zone transfer refused: bad TSIG", { tsig_error: verified.error, key: verified.tsig.keyName });
      return [refusalReply(msg, verified)];
    }
    const permit = this.permit(zs, remote, verified.status === "ok" ? verified.key : undefined);
    if (!permit.allowed) {
      this.refused(zs.zone.name, remote, "zone transfer refused", { why: permit.why });
      return [errorReply(q, Rcode.REFUSED)];
    }
    this.journal.watch(zs);
    const fromSerial = question.type === "IXFR" ? requestedSerial(q) : undefined;
    const incremental = fromSerial === undefined ? undefined : this.journal.incremental(zs, fromSerial);
    const messages = incremental ? transferMessages(incremental, q) : axfrMessages(this.engine, zs, q);
    this.log.info(
      { zone: zs.zone.name, remote, serial: zs.zone.serial, kind: incremental ? "IXFR" : "AXFR", from_serial: fromSerial, key: permit.key?.name },
      "zone transfer",
    );
    this.directory.transferred(zs.zone.id);
    if (!permit.key || verified.status !== "ok") return messages;
    return signedEach(messages, new StreamSigner(permit.key, verified.tsig.mac));
  }

  /**
   * A signed ordinary query (a secondary checking the SOA before a transfer signs it with the peer's key): the
   * answer signed with the same key, or the TSIG refusal; undefined for an unsigned query (answered as usual).
   * Any TSIG key of the account owning the zone may sign.
   */
  answerSigned(zs: ZoneState | undefined, msg: Buffer, answer: () => Buffer | undefined): Buffer | undefined | "unsigned" {
    let verified: ReturnType<typeof verifyRequest>;
    try {
      verified = verifyRequest(msg, (name) => (zs ? this.accountKeys(zs) : []).find((k) => k.name === name));
    } catch {
      return "unsigned";
    }
    if (verified.status === "unsigned") return "unsigned";
    if (verified.status === "refused") return refusalReply(msg, verified);
    const out = answer();
    return out && sign(out, verified.key, { requestMac: verified.tsig.mac }).message;
  }

  private accountKeys(zs: ZoneState): TsigKey[] {
    return this.directory
      .tsigsOf(zs.zone.account_id)
      .map((t) => this.directory.tsigKey(t.id))
      .filter((k): k is TsigKey => k !== undefined);
  }

  /** The keys that may sign a transfer request for the zone. */
  private keysFor(zs: ZoneState): TsigKey[] {
    if (!this.directory.outgoingOf(zs.zone.id)) return this.accountKeys(zs);
    return this.directory
      .outgoingPeers(zs.zone.id)
      .map((p) => this.directory.tsigKey(p.tsig_id))
      .filter((k): k is TsigKey => k !== undefined);
  }

  private permit(zs: ZoneState, remote: string, key: TsigKey | undefined): Permit {
    const outgoing = this.directory.outgoingOf(zs.zone.id);
    if (!outgoing) {
      if (!this.axfrAllow.check(remote, isIPv6(remote) ? "ipv6" : "ipv4")) return { allowed: false, why: "address not in --axfr-allow" };
      return { allowed: true, key };
    }
    if (!outgoing.enabled) return { allowed: false, why: "outgoing transfers of the zone are disabled" };
    const here = this.directory.outgoingPeers(zs.zone.id).filter((p) => p.ip && sameAddress(p.ip, remote));
    if (here.length === 0) return { allowed: false, why: "not a peer of the zone" };
    if (key) {
      const match = here.some((p) => !p.tsig_id || this.directory.tsigKey(p.tsig_id)?.name === key.name);
      return match ? { allowed: true, key } : { allowed: false, why: "signed with a key the peer does not have" };
    }
    return here.some((p) => !p.tsig_id) ? { allowed: true } : { allowed: false, why: "the peer has a TSIG key and the request is unsigned" };
  }

  private refused(zone: string | undefined, remote: string, message: string, extra: Record<string, unknown> = {}): void {
    this.refusals.hit((refused) => this.log.info({ zone, remote, refused, ...extra }, message));
  }
}

/** Each message signed as it is produced: a StreamSigner's MACs chain, so the order is the order of iteration. */
function* signedEach(messages: Iterable<Buffer>, signer: StreamSigner): Generator<Buffer> {
  for (const m of messages) yield signer.sign(m);
}

/** The serial an IXFR asks from: the SOA in its authority section (RFC 1995 §3); undefined makes it an AXFR. */
function requestedSerial(q: Decoded): number | undefined {
  const soa = q.authorities?.find((a) => a.type === "SOA") as { data?: { serial?: number } } | undefined;
  return typeof soa?.data?.serial === "number" ? soa.data.serial : undefined;
}

const RD_CD_OPCODE = 0x0100 | 0x0010 | (0xf << 11);

/** An error answer repeating the question (as the server's own errors do). */
function errorReply(q: Decoded, rcode: number): Buffer {
  const flags = ((q.flags ?? 0) & RD_CD_OPCODE) | rcode;
  return packet.encode({ id: q.id, type: "response", flags, questions: q.questions ?? [], answers: [], authorities: [], additionals: [] } as packet.Packet);
}
