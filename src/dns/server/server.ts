import dgram from "node:dgram";
import net from "node:net";
import * as packet from "dns-packet";
import { UserError } from "../../core/errors.js";
import type { Logger } from "../../core/logger.js";
import { AnswerEngine, Rcode } from "../nameserver/answer.js";
import type { DnsConfig } from "../config.js";
import type { ZoneService } from "../zones/zone-service.js";
import { DnsTcpListener } from "./tcp.js";
import type { TransferQueries } from "../nameserver/transfer-queries.js";
import { UdpAnsweringPool } from "./udp/pool.js";
import { Prewarmer } from "./prewarm.js";
import { createUdpSocket, WireCache } from "./wire-cache.js";
import { formerrReply, screenQuery } from "./wire-screen.js";
import type { DnsMetrics } from "../metrics.js";
import { QueryCounter, type QueryCount } from "./query-counts.js";

/** How often the answers counted here are handed on (DNS analytics; the rollups are written every 10 s). */
const COUNTS_EVERY_MS = 5_000;

const AA = 1 << 10;
const TC = 1 << 9;
const RD = 1 << 8;
const CD = 1 << 4;
const OPCODE_MASK = 0xf << 11;
const OPCODE_NOTIFY = 4 << 11;
/** The EDNS DO bit ("DNSSEC answer OK", RFC 3225): signatures only for queries that set it, and echoed in the reply. */
const DO = 1 << 15;
/** The EDNS CO bit ("Compact Answers OK", RFC 9824 §5): NXDOMAIN restored in compact denials; echoed in the reply. */
const CO = 1 << 14;
/** RFC 9824's NXNAME meta-type, as dns-packet names it: asked for explicitly, it is a FORMERR (§3.5). */
const NXNAME_QTYPE = "UNKNOWN_128";
/** What we advertise in EDNS, the size the DNS flag day 2020 settled on. */
const EDNS_SIZE = 1232;

type Decoded = ReturnType<typeof packet.decode>;
type Opt = { type: "OPT"; udpPayloadSize?: number; ednsVersion?: number; flags?: number };

/**
 * The authoritative server, UDP and TCP on one port. Answers are cached as wire bytes (WireCache); any
 * change to any zone clears the caches. UDP is answered here, or with --dns-workers > 1 by that many
 * processes sharing the socket, which ask this one for what they have not cached.
 */
export class DnsServer {
  private udp?: dgram.Socket;
  private tcp?: DnsTcpListener;
  private pool?: UdpAnsweringPool;
  private flushed: Promise<void> = Promise.resolve();
  private readonly udpCache = new WireCache();
  private readonly tcpCache = new WireCache();
  /** Answers the zones' own names before anyone asks, after start and after each change (prewarm.ts). */
  private readonly prewarm: Prewarmer;
  /** Answers sent by this process, per protocol (the answering processes count their own: udp/pool.ts). */
  private readonly udpCounts = new QueryCounter(() => this.handCounts());
  private readonly tcpCounts = new QueryCounter(() => this.handCounts());
  private counted?: (counts: QueryCount[], protocol: "udp" | "tcp") => void;
  private countsTimer?: NodeJS.Timeout;
  port = 0;

  constructor(
    private readonly engine: AnswerEngine,
    private readonly zones: ZoneService,
    private readonly cfg: DnsConfig,
    private readonly log: Logger,
    /** AXFR and IXFR: who may transfer, signed or not, whole or incremental (transfers/responder.ts). */
    private readonly transfers: TransferQueries,
    /** A NOTIFY (RFC 1996) from `remote`: its answer (the primaries of secondary zones, transfers/secondary.ts). */
    private readonly notified?: (q: Decoded, msg: Buffer, remote: string) => Buffer | undefined,
    /** Where answered queries and cache lookups are counted (dns/metrics.ts). */
    private readonly metrics?: DnsMetrics,
  ) {
    this.prewarm = new Prewarmer(
      cfg.prewarm ?? 0,
      zones,
      (q) => this.respond(q, false),
      (q, a) => this.pool?.offer(q, a),
    );
  }

  /** Where the answers sent are told, by question and rcode, every few seconds (dnsAnalyticsAdaptiveGroups). */
  onCounts(listener: (counts: QueryCount[], protocol: "udp" | "tcp") => void): void {
    this.counted = listener;
  }

  private handCounts(): void {
    if (!this.counted) {
      this.udpCounts.drain();
      this.tcpCounts.drain();
      return;
    }
    if (this.udpCounts.size > 0) this.counted(this.udpCounts.drain(), "udp");
    if (this.tcpCounts.size > 0) this.counted(this.tcpCounts.drain(), "tcp");
  }

  /** Forgets every cached answer, here and in the answering processes. */
  invalidate(): void {
    this.udpCache.clear();
    this.tcpCache.clear();
    if (this.pool) this.flushed = this.pool.flush();
    this.prewarm.schedule();
  }

  /** Resolves once every answering process has dropped the answers cached before the last change. */
  synced(): Promise<void> {
    return this.flushed;
  }

  async start(): Promise<void> {
    try {
      await this.listen();
      this.prewarm.schedule();
      this.countsTimer = setInterval(() => this.handCounts(), COUNTS_EVERY_MS);
      this.countsTimer.unref();
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      const where = `${this.cfg.host}:${this.cfg.port}`;
      if (code === "EADDRINUSE") throw new UserError(`The DNS port ${where} is already in use`, "Choose another with --dns-port (0 picks a free one).");
      if (code === "EACCES")
        throw new UserError(`Not allowed to listen on the DNS port ${where}`, "Ports below 1024 need privileges; see docs/dns.md (running on port 53).");
      if (code === "EADDRNOTAVAIL") throw new UserError(`--dns-host ${this.cfg.host} is not an address of this machine`);
      throw err;
    }
  }

  private async listen(): Promise<void> {
    // With port 0 the first listener picks the port and the other must get the same number; retry if it is taken.
    for (let attempt = 0; ; attempt++) {
      try {
        if (this.cfg.answeringProcesses > 1) await this.listenShared();
        else await this.listenInProcess();
        return;
      } catch (err) {
        if (this.cfg.port === 0 && attempt < 20 && (err as NodeJS.ErrnoException).code === "EADDRINUSE") continue;
        throw err;
      }
    }
  }

  private async listenInProcess(): Promise<void> {
    const udp = createUdpSocket(this.cfg.host);
    udp.on("message", (msg, rinfo) => this.onUdp(udp, msg, rinfo));
    await new Promise<void>((resolve, reject) => {
      udp.once("error", reject);
      udp.bind(this.cfg.port, this.cfg.host, () => {
        udp.off("error", reject);
        resolve();
      });
    });
    udp.on("error", (err) => this.log.warn({ err }, "dns udp socket error"));
    const port = udp.address().port;
    try {
      const tcp = this.tcpListener();
      await tcp.listen(port, this.cfg.host);
      this.tcp = tcp;
    } catch (err) {
      udp.close();
      throw err;
    }
    this.udp = udp;
    this.port = port;
  }

  /** TCP here; UDP in answering processes on the same port (udp/pool.ts), so answering is not bound to one thread. */
  private async listenShared(): Promise<void> {
    const tcp = this.tcpListener();
    const port = await tcp.listen(this.cfg.port, this.cfg.host);
    const pool = new UdpAnsweringPool(
      this.cfg.answeringProcesses,
      { host: this.cfg.host, port },
      (q, from) => this.answerUdp(q, from),
      this.log,
      () => this.prewarm.schedule(),
      (report) => this.metrics?.report(report),
      (counts) => this.counted?.(counts, "udp"),
    );
    try {
      await pool.start();
    } catch (err) {
      await tcp.close();
      throw err;
    }
    this.tcp = tcp;
    this.pool = pool;
    this.port = port;
  }

  private tcpListener(): DnsTcpListener {
    return new DnsTcpListener(this.cfg.tcp, (msg, remote) => this.respondTcp(msg, remote), this.log);
  }

  async stop(): Promise<void> {
    this.prewarm.stop();
    clearInterval(this.countsTimer);
    this.handCounts();
    this.udp?.close();
    await this.pool?.stop();
    await this.tcp?.close();
  }

  address(): string {
    return net.isIPv6(this.cfg.host) ? `[${this.cfg.host}]:${this.port}` : `${this.cfg.host}:${this.port}`;
  }

  private onUdp(udp: dgram.Socket, msg: Buffer, rinfo: dgram.RemoteInfo): void {
    try {
      const out = this.answerUdp(msg, rinfo.address);
      if (out) {
        udp.send(out, rinfo.port, rinfo.address);
        // Analytics; answers handed to an answering process are counted there, where they are sent.
        this.udpCounts.add(out);
      }
    } catch (err) {
      // Never let one packet take the server down.
      this.log.warn({ err }, "dns udp query failed");
    }
  }

  /** A UDP query from a client (here, or handed over by an answering process), counted. */
  private answerUdp(msg: Buffer, from?: string): Buffer | undefined {
    const out = this.respond(msg, false, from, true);
    if (out && out.length >= 12) this.metrics?.udp.count(msg, out);
    return out;
  }

  /** remote: the client's address (IPv4-mapped IPv6 written as IPv4). */
  private respondTcp(msg: Buffer, remote: string): Buffer[] | Iterable<Buffer> {
    const q = this.readQuery(msg, this.tcpCache, true);
    if (!isDecoded(q)) {
      if (q) this.tcpCounts.add(q);
      return this.countedTcp(msg, q ? [q] : []);
    }
    const question = q.questions?.length === 1 ? q.questions[0] : undefined;
    if (question && (question.type === "AXFR" || question.type === "IXFR") && ((q.flags ?? 0) & OPCODE_MASK) === 0) {
      return this.countedTcp(msg, this.transfers.answer(this.zones.named((question.name ?? "").toLowerCase().replace(/\.$/, "")), q, msg, remote));
    }
    const out = this.answerOrNotify(q, msg, true, remote);
    if (out) this.tcpCounts.add(out);
    return this.countedTcp(msg, out ? [out] : []);
  }

  /** The TCP answer(s) to `query`, counted once (a transfer's response code is its first message's). */
  private countedTcp(query: Buffer, answers: Buffer[] | Iterable<Buffer>): Buffer[] | Iterable<Buffer> {
    const metrics = this.metrics;
    if (!metrics) return answers;
    if (Array.isArray(answers)) {
      if (answers.length > 0 && answers[0].length >= 12) metrics.tcp.count(query, answers[0]);
      return answers;
    }
    return (function* () {
      let first = true;
      for (const a of answers) {
        if (first && a.length >= 12) metrics.tcp.count(query, a);
        first = false;
        yield a;
      }
    })();
  }

  /** One answer for one query; undefined drops it (not a query at all). `from`: the sender, which a NOTIFY needs. */
  respond(msg: Buffer, tcp: boolean, from?: string, counted = false): Buffer | undefined {
    const q = this.readQuery(msg, tcp ? this.tcpCache : this.udpCache, counted);
    return isDecoded(q) ? this.answerOrNotify(q, msg, tcp, from) : q;
  }

  /** A NOTIFY goes to the secondary zones' handler (never cached: its answer depends on the sender); the rest is answered. */
  private answerOrNotify(q: Decoded, msg: Buffer, tcp: boolean, from?: string): Buffer | undefined {
    if (((q.flags ?? 0) & OPCODE_MASK) !== OPCODE_NOTIFY) return this.answerMaybeSigned(q, msg, tcp);
    if (!this.notified || from === undefined || q.questions?.length !== 1) return this.error(q, Rcode.NOTIMP);
    return this.notified(q, msg, from);
  }

  /** A query carrying a TSIG record gets its answer signed (or the TSIG refusal): transfers/responder.ts. */
  private answerMaybeSigned(q: Decoded, msg: Buffer, tcp: boolean): Buffer | undefined {
    if (!q.additionals?.some((a) => a.type === "TSIG")) return this.answerQuery(q, msg, tcp);
    const zs = q.questions?.length === 1 ? this.zones.zoneFor((q.questions[0].name ?? "").toLowerCase().replace(/\.$/, "")) : undefined;
    const signed = this.transfers.answerSigned(zs, msg, () => this.answerQuery(q, msg, tcp));
    return signed === "unsigned" ? this.answerQuery(q, msg, tcp) : signed;
  }

  /**
   * The cached answer, FORMERR for what cannot be read (screened before dns-packet sees it: see wire-screen.ts),
   * nothing for what is not a query, or else the decoded query to answer.
   */
  private readQuery(msg: Buffer, cache: WireCache, counted = false): Decoded | Buffer | undefined {
    if (msg.length < 12) return undefined;
    const hit = cache.answer(WireCache.key(msg), msg);
    // Counted for clients' queries only (not the answers prewarm.ts builds ahead).
    if (counted && this.metrics) {
      if (hit) this.metrics.cache.mainHits++;
      else this.metrics.cache.mainMisses++;
    }
    if (hit) return hit;
    const screen = screenQuery(msg);
    if (screen !== "answer") return screen === "formerr" ? formerrReply(msg) : undefined;
    try {
      return packet.decode(msg);
    } catch {
      return formerrReply(msg);
    }
  }

  /** A screened query (never a response): its answer, cached unless it is an error. */
  private answerQuery(q: Decoded, msg: Buffer, tcp: boolean): Buffer | undefined {
    if (((q.flags ?? 0) & OPCODE_MASK) !== 0) return this.error(q, Rcode.NOTIMP);
    if (q.questions?.length !== 1) return this.error(q, Rcode.FORMERR);
    const question = q.questions[0];
    const opt = (q.additionals ?? []).find((a) => a.type === "OPT") as Opt | undefined;
    if (opt && (opt.ednsVersion ?? 0) > 0) return this.encode(q, { rcode: 0, authoritative: false, answers: [], authorities: [], additionals: [] }, opt, 1);
    if (question.class !== "IN" && question.class !== "ANY") return this.error(q, Rcode.REFUSED);
    if (question.type === "AXFR" || question.type === "IXFR") {
      if (question.type === "AXFR" || tcp) return this.error(q, Rcode.REFUSED);
    }
    if ((question.type as string) === NXNAME_QTYPE) return this.error(q, Rcode.FORMERR);
    const dnssecOk = ((opt?.flags ?? 0) & DO) !== 0;
    const compactOk = ((opt?.flags ?? 0) & CO) !== 0;
    let result = this.engine.answer(question.name, question.type === "IXFR" ? "SOA" : question.type, dnssecOk, compactOk);
    if (!result) return this.error(q, Rcode.REFUSED);
    let out = this.encode(q, result, opt);
    const limit = tcp ? 65535 : opt ? Math.min(Math.max(opt.udpPayloadSize ?? 512, 512), 4096) : 512;
    if (out.length > limit) {
      result = { ...result, answers: [], authorities: [], additionals: [] };
      out = this.encode(q, result, opt, 0, TC);
    }
    (tcp ? this.tcpCache : this.udpCache).set(WireCache.key(msg), out);
    return out;
  }

  private encode(
    q: Decoded,
    a: { rcode: number; authoritative: boolean; answers: unknown[]; authorities: unknown[]; additionals: unknown[] },
    opt?: Opt,
    extendedRcode = 0,
    extra = 0,
  ): Buffer {
    const additionals = [...a.additionals];
    if (opt)
      additionals.push({ type: "OPT", name: ".", udpPayloadSize: EDNS_SIZE, extendedRcode, ednsVersion: 0, flags: (opt.flags ?? 0) & (DO | CO), options: [] });
    // dns-packet takes the response code from the low bits of flags, not from a field.
    const flags = (a.authoritative ? AA : 0) | ((q.flags ?? 0) & (RD | CD)) | extra | (a.rcode & 0xf);
    return packet.encode({
      id: q.id,
      type: "response",
      flags,
      questions: q.questions,
      answers: a.answers,
      authorities: a.authorities,
      additionals,
    } as packet.Packet);
  }

  /** An error answer; the question is repeated only when there is exactly one, so an error is never larger than its query. */
  private error(q: Decoded, rcode: number): Buffer {
    const flags = ((q.flags ?? 0) & (RD | CD | OPCODE_MASK)) | rcode;
    const questions = q.questions?.length === 1 ? q.questions : [];
    return packet.encode({ id: q.id, type: "response", flags, questions, answers: [], authorities: [], additionals: [] } as packet.Packet);
  }
}

const isDecoded = (q: Decoded | Buffer | undefined): q is Decoded => q !== undefined && !Buffer.isBuffer(q);
