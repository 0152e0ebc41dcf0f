import dgram from "node:dgram";
import net from "node:net";
import * as packet from "dns-packet";

/** One version of the primary's zone: its serial and its records other than the SOA, and its SOA timers when not the usual. */
export interface PrimaryVersion {
  serial: number;
  records: packet.Answer[];
  timers?: Partial<Pick<packet.SoaData, "refresh" | "retry" | "expire">>;
}

/**
 * What the primary does to its next AXFR or IXFR answer: closes the connection before the last message, answers
 * SERVFAIL in it, or sends it whole and closes at once (not a breakage: the answer is complete).
 */
export type Breakage = "close-before-last" | "servfail-in-last" | "close-after-last";

/**
 * A primary on loopback TCP that answers SOA, AXFR and IXFR from versions the test sets, in many small messages
 * (`perMessage` records each), and can break an answer late, after most of its messages went out: what no real
 * primary does on request, and what a secondary must survive (the stand-in is for the failure, the exchange is real
 * DNS over TCP). IXFR from a version it holds is answered with the differences (RFC 1995 §4), otherwise with the
 * whole zone.
 */
export class ScriptedPrimary {
  private readonly versions: PrimaryVersion[] = [];
  private server?: net.Server;
  /** Set by breakNext: the next AXFR or IXFR answer is broken so, then answers are whole again. */
  private breakage?: Breakage;
  /** Transfers answered, by kind, for the test to tell which one the secondary asked. */
  readonly served: string[] = [];
  /** SOA queries answered (a secondary's refresh asks one before it transfers anything). */
  soaQueries = 0;
  port = 0;

  constructor(
    readonly zone: string,
    private readonly perMessage = 50,
  ) {}

  async start(): Promise<void> {
    this.server = net.createServer((socket) => this.serve(socket));
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
  }

  async stop(): Promise<void> {
    await new Promise((resolve) => this.server?.close(resolve));
  }

  /** Makes `v` the zone's current version (the older ones stay, for IXFR). */
  publish(v: PrimaryVersion): void {
    this.versions.push(v);
  }

  breakNext(how: Breakage): void {
    this.breakage = how;
  }

  /** Sends an unsigned NOTIFY for the zone to `port` on loopback (as a primary does after a change). */
  notify(port: number): Promise<void> {
    const msg = packet.encode({
      id: 77,
      type: "query",
      flags: (4 << 11) | (1 << 10),
      questions: [{ name: this.zone, type: "SOA", class: "IN" }],
    } as packet.Packet);
    return new Promise((resolve, reject) => {
      const s = dgram.createSocket("udp4");
      const timer = setTimeout(() => (s.close(), reject(new Error("no answer to NOTIFY"))), 10_000);
      s.once("message", () => (clearTimeout(timer), s.close(), resolve()));
      s.send(msg, port, "127.0.0.1");
    });
  }

  soa(serial: number): packet.Answer {
    const z = this.zone;
    const timers = this.versions.find((v) => v.serial === serial)?.timers;
    return {
      name: z,
      type: "SOA",
      ttl: 300,
      class: "IN",
      data: { mname: `ns1.${z}`, rname: `hostmaster.${z}`, serial, refresh: 3600, retry: 600, expire: 86400, minimum: 300, ...timers },
    } as packet.Answer;
  }

  private serve(socket: net.Socket): void {
    let pending = Buffer.alloc(0);
    socket.on("error", () => {});
    socket.on("data", (chunk) => {
      pending = Buffer.concat([pending, chunk]);
      if (pending.length < 2 || pending.length < 2 + pending.readUInt16BE(0)) return;
      const q = packet.decode(pending.subarray(2, 2 + pending.readUInt16BE(0)));
      pending = Buffer.alloc(0);
      this.answer(socket, q);
    });
  }

  private answer(socket: net.Socket, q: packet.Packet): void {
    const current = this.versions[this.versions.length - 1];
    const type = q.questions?.[0]?.type as string;
    const soa = this.soa(current.serial);
    if (type === "SOA") {
      this.soaQueries++;
      return this.send(socket, q, [[soa]]);
    }
    let rrs: packet.Answer[];
    const from = (q.authorities?.find((a) => a.type === "SOA") as { data?: packet.SoaData } | undefined)?.data?.serial;
    const old = type === "IXFR" ? this.versions.find((v) => v.serial === from) : undefined;
    if (old && old !== current) {
      this.served.push("IXFR");
      const key = (r: packet.Answer) => JSON.stringify([r.name, r.type, (r as { data: unknown }).data]);
      const now = new Set(current.records.map(key));
      const was = new Set(old.records.map(key));
      rrs = [soa, this.soa(old.serial), ...old.records.filter((r) => !now.has(key(r))), soa, ...current.records.filter((r) => !was.has(key(r))), soa];
    } else {
      this.served.push("AXFR");
      rrs = [soa, ...current.records, soa];
    }
    const messages: packet.Answer[][] = [];
    for (let i = 0; i < rrs.length; i += this.perMessage) messages.push(rrs.slice(i, i + this.perMessage));
    const breakage = this.breakage;
    this.breakage = undefined;
    if (breakage === "close-before-last") {
      this.send(socket, q, messages.slice(0, -1));
      socket.end();
      return;
    }
    this.send(socket, q, messages, breakage === "servfail-in-last" ? 2 : 0);
    if (breakage === "close-after-last") socket.end();
  }

  /** Writes one response message per group of records; `lastRcode` in the last one. */
  private send(socket: net.Socket, q: packet.Packet, messages: packet.Answer[][], lastRcode = 0): void {
    messages.forEach((answers, i) => {
      const rcode = i === messages.length - 1 ? lastRcode : 0;
      const m = packet.encode({
        id: q.id,
        type: "response",
        flags: (1 << 10) | rcode,
        questions: i === 0 ? q.questions : [],
        answers,
      } as packet.Packet);
      const framed = Buffer.alloc(m.length + 2);
      framed.writeUInt16BE(m.length);
      m.copy(framed, 2);
      socket.write(framed);
    });
  }
}
