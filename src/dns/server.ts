import dgram from "node:dgram";
import net from "node:net";
import * as packet from "dns-packet";
import { UserError } from "../core/errors.js";
import type { Logger } from "../core/logger.js";
import { AnswerEngine, Rcode } from "./answer.js";
import { axfrMessages } from "./axfr.js";
import type { DnsConfig } from "./config.js";
import type { DnsState } from "./state.js";
import { UdpWorkerPool } from "./udp-pool.js";
import { createUdpSocket, WireCache } from "./wire-cache.js";

const AA = 1 << 10;
const TC = 1 << 9;
const RD = 1 << 8;
const CD = 1 << 4;
const OPCODE_MASK = 0xf << 11;
/** What we advertise in EDNS, the size the DNS flag day 2020 settled on. */
const EDNS_SIZE = 1232;
const TCP_IDLE_MS = 10_000;

type Decoded = ReturnType<typeof packet.decode>;
type Opt = { type: "OPT"; udpPayloadSize?: number; ednsVersion?: number; flags?: number };

/**
 * The authoritative server, UDP and TCP on one port. Answers are cached as wire bytes (WireCache); any
 * change to any zone clears the caches. UDP is answered here, or with --dns-workers > 1 by that many
 * processes sharing the socket, which ask this one for what they have not cached.
 */
export class DnsServer {
  private udp?: dgram.Socket;
  private tcp?: net.Server;
  private readonly sockets = new Set<net.Socket>();
  private pool?: UdpWorkerPool;
  private flushed: Promise<void> = Promise.resolve();
  private readonly udpCache = new WireCache();
  private readonly tcpCache = new WireCache();
  port = 0;

  constructor(
    private readonly engine: AnswerEngine,
    private readonly state: DnsState,
    private readonly cfg: DnsConfig,
    private readonly log: Logger,
  ) {}

  /** Forgets every cached answer, here and in the answering processes. */
  invalidate(): void {
    this.udpCache.clear();
    this.tcpCache.clear();
    if (this.pool) this.flushed = this.pool.flush();
  }

  /** Resolves once every answering process has dropped the answers cached before the last change. */
  synced(): Promise<void> {
    return this.flushed;
  }

  async start(): Promise<void> {
    try {
      await this.listen();
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
        if (this.cfg.workers > 1) await this.listenShared();
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
      this.tcp = await this.listenTcp(port);
    } catch (err) {
      udp.close();
      throw err;
    }
    this.udp = udp;
    this.port = port;
  }

  /** TCP here; UDP in answering processes sharing one socket (udp-pool.ts), so answering is not bound to one thread. */
  private async listenShared(): Promise<void> {
    const tcp = await this.listenTcp(this.cfg.port);
    const port = (tcp.address() as net.AddressInfo).port;
    const pool = new UdpWorkerPool(this.cfg.workers, { host: this.cfg.host, port }, (q) => this.respond(q, false), this.log);
    try {
      await pool.start();
    } catch (err) {
      await new Promise((resolve) => tcp.close(resolve));
      throw err;
    }
    this.tcp = tcp;
    this.pool = pool;
    this.port = port;
  }

  private async listenTcp(port: number): Promise<net.Server> {
    const tcp = net.createServer((s) => this.onTcp(s));
    await new Promise<void>((resolve, reject) => {
      tcp.once("error", reject);
      tcp.listen(port, this.cfg.host, () => {
        tcp.off("error", reject);
        resolve();
      });
    });
    return tcp;
  }

  async stop(): Promise<void> {
    this.udp?.close();
    await this.pool?.stop();
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => (this.tcp ? this.tcp.close(() => resolve()) : resolve()));
  }

  address(): string {
    return net.isIPv6(this.cfg.host) ? `[${this.cfg.host}]:${this.port}` : `${this.cfg.host}:${this.port}`;
  }

  private onUdp(udp: dgram.Socket, msg: Buffer, rinfo: dgram.RemoteInfo): void {
    try {
      const out = this.respond(msg, false);
      if (out) udp.send(out, rinfo.port, rinfo.address);
    } catch (err) {
      // Never let one packet take the server down.
      this.log.warn({ err }, "dns udp query failed");
    }
  }

  private onTcp(socket: net.Socket): void {
    this.sockets.add(socket);
    socket.setTimeout(TCP_IDLE_MS, () => socket.destroy());
    socket.on("error", () => socket.destroy());
    socket.on("close", () => this.sockets.delete(socket));
    let buf: Buffer = Buffer.alloc(0);
    socket.on("data", (chunk: Buffer) => {
      buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
      while (buf.length >= 2) {
        const len = buf.readUInt16BE(0);
        if (buf.length < 2 + len) break;
        const msg = buf.subarray(2, 2 + len);
        buf = buf.subarray(2 + len);
        try {
          for (const out of this.respondTcp(msg, socket.remoteAddress ?? "")) socket.write(frame(out));
        } catch (err) {
          this.log.warn({ err }, "dns tcp query failed");
          socket.destroy();
          return;
        }
      }
    });
  }

  private respondTcp(msg: Buffer, remote: string): Buffer[] {
    if (msg.length >= 12) {
      let q: Decoded | undefined;
      try {
        q = packet.decode(msg);
      } catch {
        /* answered as FORMERR by respond() */
      }
      const qt = q?.questions?.[0]?.type;
      if (q && q.type === "query" && (qt === "AXFR" || qt === "IXFR")) {
        const zs = this.state.byName.get((q.questions![0].name ?? "").toLowerCase().replace(/\.$/, ""));
        const addr = remote.replace(/^::ffff:/, "");
        const allowed = zs && this.cfg.axfrAllow.check(addr, net.isIPv6(addr) ? "ipv6" : "ipv4");
        if (!zs || !allowed) {
          this.log.info({ zone: q.questions![0].name, remote }, zs ? "zone transfer refused" : "zone transfer for unknown zone refused");
          return [this.error(q, zs ? Rcode.REFUSED : Rcode.NOTAUTH)];
        }
        this.log.info({ zone: zs.zone.name, remote, serial: zs.zone.serial }, "zone transfer");
        return axfrMessages(this.engine, zs, q);
      }
    }
    const out = this.respond(msg, true);
    return out ? [out] : [];
  }

  /** One answer for one query; undefined drops it (not a query at all). */
  respond(msg: Buffer, tcp: boolean): Buffer | undefined {
    if (msg.length < 12) return undefined;
    const cache = tcp ? this.tcpCache : this.udpCache;
    const key = WireCache.key(msg);
    const hit = cache.answer(key, msg);
    if (hit) return hit;
    let q: Decoded;
    try {
      q = packet.decode(msg);
    } catch {
      return this.formerr(msg);
    }
    if (q.type !== "query") return undefined;
    if (((q.flags ?? 0) & OPCODE_MASK) !== 0) return this.error(q, Rcode.NOTIMP);
    if (q.questions?.length !== 1) return this.error(q, Rcode.FORMERR);
    const question = q.questions[0];
    const opt = (q.additionals ?? []).find((a) => a.type === "OPT") as Opt | undefined;
    if (opt && (opt.ednsVersion ?? 0) > 0) return this.encode(q, { rcode: 0, authoritative: false, answers: [], authorities: [], additionals: [] }, opt, 1);
    if (question.class !== "IN" && question.class !== "ANY") return this.error(q, Rcode.REFUSED);
    if (question.type === "AXFR" || question.type === "IXFR") {
      if (question.type === "AXFR" || tcp) return this.error(q, Rcode.REFUSED);
    }
    let result = this.engine.answer(question.name, question.type === "IXFR" ? "SOA" : question.type);
    if (!result) return this.error(q, Rcode.REFUSED);
    let out = this.encode(q, result, opt);
    const limit = tcp ? 65535 : opt ? Math.min(Math.max(opt.udpPayloadSize ?? 512, 512), 4096) : 512;
    if (out.length > limit) {
      result = { ...result, answers: [], authorities: [], additionals: [] };
      out = this.encode(q, result, opt, 0, TC);
    }
    cache.set(key, out);
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
    if (opt) additionals.push({ type: "OPT", name: ".", udpPayloadSize: EDNS_SIZE, extendedRcode, ednsVersion: 0, flags: 0, options: [] });
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

  private error(q: Decoded, rcode: number): Buffer {
    const flags = ((q.flags ?? 0) & (RD | CD | OPCODE_MASK)) | rcode;
    return packet.encode({ id: q.id, type: "response", flags, questions: q.questions ?? [], answers: [], authorities: [], additionals: [] } as packet.Packet);
  }

  /** FORMERR with just the header, for queries we cannot parse (a response is never answered). */
  private formerr(msg: Buffer): Buffer | undefined {
    const flags = msg.readUInt16BE(2);
    if (flags & 0x8000) return undefined;
    const out = Buffer.alloc(12);
    out.writeUInt16BE(msg.readUInt16BE(0), 0);
    out.writeUInt16BE(0x8000 | (flags & (OPCODE_MASK | RD)) | Rcode.FORMERR, 2);
    return out;
  }
}

function frame(b: Buffer): Buffer {
  const out = Buffer.alloc(b.length + 2);
  out.writeUInt16BE(b.length, 0);
  b.copy(out, 2);
  return out;
}
