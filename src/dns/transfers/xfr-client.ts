import net from "node:net";
import { randomInt } from "node:crypto";
import * as packet from "dns-packet";
import { sign, StreamVerifier, type TsigKey } from "../nameserver/tsig.js";

/** Bounds on one request to a primary, so a slow, huge or hostile primary costs a bounded time and memory. */
export interface XfrLimits {
  /** The whole exchange, from connecting to the last message. */
  timeoutMs: number;
  /** Silence between two messages. */
  idleMs: number;
  /** Bytes of all the messages of an answer together. */
  maxBytes: number;
  /** Records of all the messages together. */
  maxRecords: number;
}

/** Records decoded and handed over between two turns of the event loop (whole messages: a little more at times). */
const RECORDS_PER_TURN = 1000;

export const DEFAULT_XFR_LIMITS: XfrLimits = { timeoutMs: 120_000, idleMs: 15_000, maxBytes: 64 * 1024 * 1024, maxRecords: 500_000 };

export interface XfrRequest {
  host: string;
  port: number;
  zone: string;
  type: "SOA" | "AXFR" | "IXFR";
  /** For IXFR: the SOA we hold (sent in the authority section, RFC 1995 §3). */
  soa?: packet.Answer;
  key?: TsigKey;
  limits?: XfrLimits;
}

/** A request that failed: refused, timed out, too large, badly signed... `why` says which, for the log and the API. */
export class XfrError extends Error {}

const RCODES = ["NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED", "YXDOMAIN", "YXRRSET", "NXRRSET", "NOTAUTH", "NOTZONE"];

/**
 * Asks a primary over TCP and returns the records of its answer, in order, across however many messages it takes
 * (streamXfr, collected: for the SOA query and small answers).
 */
export async function requestXfr(req: XfrRequest): Promise<packet.Answer[]> {
  const rrs: packet.Answer[] = [];
  await streamXfr(req, (message) => {
    for (const rr of message) rrs.push(rr);
  });
  return rrs;
}

/**
 * Asks a primary over TCP and hands the records of its answer to `take`, one message at a time as each arrives, so
 * the caller converts them and lets the decoded message go (a 200,000-record AXFR held whole in dns-packet objects
 * was most of a 600 MB heap). The answer ends with the message that holds its last record: for SOA the first
 * message; for AXFR the second SOA; for IXFR (RFC 1995 §4) the lone SOA of an up-to-date answer, or the final SOA
 * after the differences, or the closing SOA of a whole zone sent instead. Signed with `key` when given, and then
 * every message must verify (StreamVerifier). The socket is read as fast as the primary sends, and the messages are
 * decoded a bounded number of records per turn of the event loop, so a large zone never blocks the loop for long. Resolves once the answer is
 * complete; rejects (XfrError, or what `take` threw) otherwise, and `take` is then not called again: whatever it
 * gathered is not a whole answer.
 */
export function streamXfr(req: XfrRequest, take: (rrs: readonly packet.Answer[]) => void): Promise<void> {
  const limits = req.limits ?? DEFAULT_XFR_LIMITS;
  const id = randomInt(0, 65536);
  const query = packet.encode({
    id,
    type: "query",
    flags: 0,
    questions: [{ name: req.zone, type: req.type as packet.RecordType, class: "IN" }],
    authorities: req.type === "IXFR" && req.soa ? [req.soa] : [],
  } as packet.Packet);
  const signed = req.key ? sign(query, req.key) : undefined;
  const verifier = req.key && signed ? new StreamVerifier(req.key, signed.mac) : undefined;
  const wire = signed ? signed.message : query;
  const framed = Buffer.concat([Buffer.from([wire.length >> 8, wire.length & 0xff]), wire]);

  return new Promise((resolve, reject) => {
    const ending = new TransferEnd(req.type);
    let records = 0;
    let pending: Buffer = Buffer.alloc(0);
    let bytes = 0;
    let settled = false;
    /** Messages received and not yet decoded, and whether the primary has closed the connection after them. */
    const backlog: Buffer[] = [];
    let closed = false;
    let draining = false;
    const socket = net.connect({ host: req.host, port: req.port });
    const finish = (err?: unknown) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      socket.destroy();
      backlog.length = 0;
      if (err) reject(err);
      else resolve();
    };
    const deadline = setTimeout(() => finish(new XfrError(`no complete answer within ${limits.timeoutMs / 1000} s`)), limits.timeoutMs);
    socket.setTimeout(limits.idleMs, () => {
      // Silence counts only once what arrived is read: a backlog means the primary was faster than us, not silent.
      if (backlog.length === 0) finish(new XfrError(`the primary was silent for ${limits.idleMs / 1000} s`));
    });
    socket.once("error", (err) => finish(new XfrError(`cannot reach the primary: ${err.message}`)));
    socket.once("close", () => {
      closed = true;
      if (backlog.length === 0) finish(new XfrError("the primary closed the connection before the answer was complete"));
    });
    socket.once("connect", () => socket.write(framed));
    // The socket is read as fast as the primary sends: a primary waits only so long for a slow reader (Knot closes
    // the connection after 500 ms, its tcp-io-timeout), and the messages' bytes (at most limits.maxBytes, outside
    // V8's heap) are a fraction of what their decoded records weigh. They are decoded and handed to `take` a bounded
    // number of records per turn of the event loop (drain).
    socket.on("data", (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > limits.maxBytes) return finish(new XfrError(`the answer is larger than ${limits.maxBytes} bytes`));
      pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
      while (pending.length >= 2 && pending.length >= 2 + pending.readUInt16BE(0)) {
        const size = pending.readUInt16BE(0);
        // A copy: a subarray would keep the whole socket read it came from alive until the message is decoded.
        backlog.push(Buffer.from(pending.subarray(2, 2 + size)));
        pending = pending.subarray(2 + size);
      }
      if (!draining && backlog.length) {
        draining = true;
        setImmediate(drain);
      }
    });

    /** Decodes backlogged messages, about RECORDS_PER_TURN records' worth per turn of the event loop. */
    function drain(): void {
      draining = false;
      let decoded = 0;
      while (!settled && backlog.length && decoded < RECORDS_PER_TURN) {
        const msg = backlog.shift()!;
        let answers: packet.Answer[];
        let done: boolean;
        try {
          ({ answers, done } = readMessage(msg));
        } catch (err) {
          return finish(err instanceof XfrError ? err : new XfrError(`unreadable answer: ${(err as Error).message}`));
        }
        try {
          take(answers);
        } catch (err) {
          return finish(err);
        }
        if (done) return finish();
        decoded += answers.length;
      }
      if (settled) return;
      if (backlog.length) {
        draining = true;
        setImmediate(drain);
      } else if (closed) finish(new XfrError("the primary closed the connection before the answer was complete"));
      else socket.setTimeout(limits.idleMs); // the silence is counted from now
    }

    /** Checks and decodes one message: its records, and whether the answer is complete with them. */
    function readMessage(msg: Buffer): { answers: packet.Answer[]; done: boolean } {
      if (msg.length < 12 || msg.readUInt16BE(0) !== id) throw new XfrError("a message that does not answer our request");
      const rcode = msg.readUInt16BE(2) & 0xf;
      if (rcode !== 0) throw new XfrError(`the primary answered ${RCODES[rcode] ?? rcode}`);
      if (verifier) {
        try {
          verifier.verify(msg);
        } catch (err) {
          throw new XfrError(`TSIG: ${(err as Error).message}`);
        }
      }
      const answers = packet.decode(msg).answers ?? [];
      if (records + answers.length > limits.maxRecords) throw new XfrError(`the answer has more than ${limits.maxRecords} records`);
      records += answers.length;
      for (const rr of answers) ending.add(rr);
      if (records === 0) throw new XfrError("the primary answered without records (is it authoritative for the zone?)");
      const done = ending.done();
      if (done && verifier && !verifier.complete()) throw new XfrError("TSIG: the last message is not signed");
      return { answers, done };
    }
  });
}

/** Tells, record by record, whether a transfer's answer is complete (the SOA that closes it has arrived). */
class TransferEnd {
  private count = 0;
  private finalSerial = -1;
  /** IXFR: "del" expecting a removal run's SOA, "add" after the SOA that starts additions; "axfr": a whole zone. */
  private mode: "start" | "axfr" | "del-soa" | "del" | "add" | "end" = "start";

  constructor(private readonly type: "SOA" | "AXFR" | "IXFR") {}

  add(rr: packet.Answer): void {
    const isSoa = rr.type === "SOA";
    const serial = isSoa ? ((rr as { data: packet.SoaData }).data.serial ?? 0) : -1;
    this.count++;
    if (this.count === 1) {
      if (!isSoa) throw new XfrError("the answer does not start with the zone's SOA");
      this.finalSerial = serial;
      return;
    }
    if (this.mode === "end") throw new XfrError("records after the end of the transfer");
    if (this.count === 2) this.mode = this.type === "IXFR" && isSoa ? "del-soa" : "axfr";
    switch (this.mode) {
      case "axfr":
        if (isSoa) this.mode = "end";
        return;
      case "del-soa":
        this.mode = "del";
        return;
      case "del":
        if (isSoa) this.mode = "add";
        return;
      case "add":
        // The SOA after additions: the final one (the last difference ends at the final serial), or the next difference.
        if (isSoa) this.mode = serial === this.finalSerial ? "end" : "del";
        return;
    }
  }

  /** After a message: complete? A SOA answer is one message; an IXFR of one SOA means "you are current". */
  done(): boolean {
    if (this.type === "SOA") return this.count > 0;
    if (this.type === "IXFR" && this.count === 1) return true;
    return this.mode === "end";
  }
}
