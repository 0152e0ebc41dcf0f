import dgram from "node:dgram";
import { randomInt } from "node:crypto";
import { isIPv6 } from "node:net";
import * as packet from "dns-packet";
import type { Logger } from "../../core/logger.js";
import type { AnswerEngine } from "./answer.js";
import type { DnsConfig } from "../config.js";
import type { ZoneState } from "../zones/zone-state.js";
import { sameAddress } from "./addresses.js";
import { sign, verifyResponse, type TsigKey } from "./tsig.js";

const QR = 0x8000;
const OPCODE_MASK = 0xf << 11;
const NOTIFY = 4 << 11;
const AA = 1 << 10;
/** Changes made close together (a batch, an import) produce one NOTIFY. */
const DEBOUNCE_MS = 100;
const ATTEMPTS = 4;
const FIRST_WAIT_MS = 1000;

/** Where a zone's NOTIFY goes, and the TSIG key it is signed with (if any). */
export interface NotifyTarget {
  host: string;
  port: number;
  key?: TsigKey;
}

/**
 * Sends DNS NOTIFY (RFC 1996) to the configured secondaries when a zone's serial changes, retrying
 * with back-off until each acknowledges (same id, opcode NOTIFY, QR set).
 */
export class Notifier {
  private readonly timers = new Map<string, NodeJS.Timeout>();
  /** NOTIFYs sent and not acknowledged yet, by id. */
  private readonly waiting = new Map<number, { host: string; port: number; signedBy?: { key: TsigKey; mac: Buffer }; acked: () => void }>();
  private readonly sockets: Partial<Record<"udp4" | "udp6", dgram.Socket>> = {};
  private stopped = false;

  constructor(
    private readonly cfg: DnsConfig,
    private readonly engine: AnswerEngine,
    private readonly log: Logger,
    /** The zone's secondaries: by default the --notify targets (transfers/ gives a zone's peers instead). */
    private readonly targets: (zs: ZoneState) => NotifyTarget[] = () => cfg.notifyTargets,
  ) {}

  schedule(zs: ZoneState): void {
    if (this.stopped || this.targets(zs).length === 0) return;
    clearTimeout(this.timers.get(zs.zone.id));
    this.timers.set(
      zs.zone.id,
      setTimeout(() => {
        this.timers.delete(zs.zone.id);
        this.notifyNow(zs);
      }, DEBOUNCE_MS),
    );
  }

  /** Sends the zone's NOTIFY to each of its secondaries now; how many it went to. */
  notifyNow(zs: ZoneState): number {
    const targets = this.stopped ? [] : this.targets(zs);
    for (const t of targets) void this.send(zs, t);
    return targets.length;
  }

  private socket(family: "udp4" | "udp6"): dgram.Socket {
    let s = this.sockets[family];
    if (!s) {
      s = dgram.createSocket(family);
      s.on("error", (err) => this.log.warn({ err }, "notify socket error"));
      // An acknowledgement is told by its header alone (QR, opcode NOTIFY, our id) from the secondary we sent
      // to; nothing else is decoded, so datagrams sent to this port cost next to nothing (see wire-screen.ts).
      s.on("message", (msg, rinfo) => {
        if (msg.length < 12) return;
        const flags = msg.readUInt16BE(2);
        if (!(flags & QR) || (flags & OPCODE_MASK) !== NOTIFY) return;
        const w = this.waiting.get(msg.readUInt16BE(0));
        if (!w || w.port !== rinfo.port || !sameAddress(w.host, rinfo.address)) return;
        // A signed NOTIFY is acknowledged only by an answer signed with the same key.
        if (w.signedBy && !verifyResponse(msg, w.signedBy.key, w.signedBy.mac).ok) return;
        w.acked();
      });
      s.bind(0);
      s.unref();
      this.sockets[family] = s;
    }
    return s;
  }

  private async send(zs: ZoneState, { host, port, key }: NotifyTarget): Promise<void> {
    const id = randomInt(0, 65536);
    const unsigned = packet.encode({
      id,
      type: "query",
      flags: NOTIFY | AA,
      questions: [{ name: zs.zone.name, type: "SOA", class: "IN" }],
      answers: [this.engine.soaRr(zs)],
    } as packet.Packet);
    // Signed when the secondary has a key: a secondary that knows one refuses unsigned NOTIFY (RFC 8945).
    const signed = key && sign(unsigned, key);
    const msg = signed ? signed.message : unsigned;
    const sock = this.socket(isIPv6(host) ? "udp6" : "udp4");
    for (let attempt = 0; attempt < ATTEMPTS && !this.stopped; attempt++) {
      const acked = await new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), FIRST_WAIT_MS * 2 ** attempt);
        timer.unref();
        this.waiting.set(id, {
          host,
          port,
          signedBy: key && signed ? { key, mac: signed.mac } : undefined,
          acked: () => {
            clearTimeout(timer);
            resolve(true);
          },
        });
        sock.send(msg, port, host, (err) => err && this.log.warn({ err, host, port }, "notify send failed"));
      });
      this.waiting.delete(id);
      if (acked) {
        this.log.info({ zone: zs.zone.name, serial: zs.zone.serial, secondary: `${host}:${port}` }, "secondary acknowledged NOTIFY");
        return;
      }
    }
    if (!this.stopped) this.log.warn({ zone: zs.zone.name, secondary: `${host}:${port}` }, "secondary did not acknowledge NOTIFY");
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.timers.values()) clearTimeout(t);
    for (const s of Object.values(this.sockets)) s?.close();
  }
}
