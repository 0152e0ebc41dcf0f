import * as packet from "dns-packet";
import type { Logger } from "../../core/logger.js";
import { Rcode, type AnswerEngine } from "../nameserver/answer.js";
import { LogThrottle } from "../log-throttle.js";
import type { ZoneService } from "../zones/zone-service.js";
import type { ZoneState } from "../zones/zone-state.js";
import { PEER_NOT_ALLOWED } from "./addresses.js";
import { sameAddress } from "../nameserver/addresses.js";
import type { TransferDirectory } from "./directory.js";
import { soaOf } from "./incoming-records.js";
import { IncomingTransfer } from "./incoming-transfer.js";
import type { Peer } from "./model.js";
import { refusalReply, sign, verifyRequest, type TsigKey } from "../nameserver/tsig.js";
import { DEFAULT_XFR_LIMITS, requestXfr, streamXfr, XfrError, type XfrLimits } from "./xfr-client.js";

export { secondaryRecord } from "./incoming-transfer.js";

type Decoded = ReturnType<typeof packet.decode>;

/** How often refused NOTIFYs reach the log (one line, with how many), as refused transfers (responder.ts). */
const NOTIFY_REFUSED_LOG_INTERVAL_MS = 10_000;
/** Retry of a zone that has never been transferred (its SOA retry is not known yet). */
const FIRST_RETRY_S = 10;
/** Bounds on timers: a primary's SOA of 0 must not spin, nor one of years overflow setTimeout. */
const MIN_TIMER_S = 1;
const MAX_TIMER_S = 7 * 86400;

/** RFC 1982 serial arithmetic: whether `a` is newer than `b`. */
export const serialNewer = (a: number, b: number) => a !== b && (a - b + 2 ** 32) % 2 ** 32 < 2 ** 31;

/** What the API shows of a secondary zone's last refresh (ours, beside the hosted API's fields). */
export interface RefreshStatus {
  last_error: string | null;
  /** Records of the last transfer the zone does not keep (DNSSEC records, types the platform does not store). */
  skipped_records: number;
}

/** When the zone is next refreshed and when it stops being served, as the API shows them (ISO times). */
export interface RefreshTimes {
  /** Null while a refresh runs, or when the zone has no incoming configuration. */
  next_refresh_time: string | null;
  /** When the SOA expire passes without a primary answering; null when the zone is not served (expired, or never transferred). */
  expires_time: string | null;
}

/**
 * The platform as a secondary (RFC 5936, 1995, 1996): each secondary zone is copied from its primaries (the peers of
 * its incoming configuration) by AXFR, or IXFR when the peer offers it and the zone holds a serial, signed with the
 * peer's TSIG key when it has one. A zone is refreshed when one of its primaries sends a NOTIFY (from the peer's
 * address, signed when the peer has a key), every SOA refresh (or `auto_refresh_seconds`, whichever is shorter),
 * after SOA retry when a refresh failed, and at once when its configuration changes. A failed or badly signed
 * transfer changes nothing: the zone keeps its records until the SOA expire has passed since a primary last
 * answered, and then answers SERVFAIL (as before its first transfer) until a primary answers again.
 */
export class SecondaryZones {
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly notifyRefusals = new LogThrottle(NOTIFY_REFUSED_LOG_INTERVAL_MS);
  private readonly expiries = new Map<string, NodeJS.Timeout>();
  private readonly running = new Map<string, Promise<void>>();
  /** Zones asked to refresh again while a refresh ran (a NOTIFY during a transfer); `true` forces AXFR. */
  private readonly again = new Map<string, boolean>();
  /** What callers of refreshNow wait for while a refresh runs: the end of the one that follows it. */
  private readonly followUp = new Map<string, Promise<void>>();
  private readonly status = new Map<string, RefreshStatus>();
  /** Epoch ms of each zone's armed refresh timer, and of its SOA expire while it is served. */
  private readonly nextRefreshAt = new Map<string, number>();
  private readonly expiresAt = new Map<string, number>();
  private stopped = false;

  constructor(
    private readonly zones: ZoneService,
    private readonly directory: TransferDirectory,
    private readonly engine: AnswerEngine,
    private readonly log: Logger,
    /** Empties every answer cache (a zone starts or stops being served without its records changing). */
    private readonly invalidate: () => void,
    /** Whether a primary's address may be connected to (a tenant names it; transfers/addresses.ts). */
    private readonly peerAllowed: (ip: string) => boolean,
    private readonly limits: XfrLimits = DEFAULT_XFR_LIMITS,
  ) {}

  /** Starts refreshing every secondary zone (after the zones and the directory are loaded). */
  start(): void {
    for (const zs of this.zones.all()) if (zs.zone.type === "secondary") this.configured(zs.zone.id);
  }

  stop(): void {
    this.stopped = true;
    for (const t of [...this.timers.values(), ...this.expiries.values()]) clearTimeout(t);
  }

  /** The zone's incoming configuration was created, changed or removed (or the zone created): refresh now. */
  configured(zoneId: string): void {
    this.updateServed(zoneId);
    if (this.directory.incomingOf(zoneId)) this.refreshSoon(zoneId);
    else {
      clearTimeout(this.timers.get(zoneId));
      this.nextRefreshAt.delete(zoneId);
    }
  }

  /**
   * The zone is gone. A refresh of it still running keeps nothing when it ends (`gone`): no status, no timer, no
   * serving state, no follow-up refresh.
   */
  forget(zoneId: string): void {
    this.again.delete(zoneId);
    clearTimeout(this.timers.get(zoneId));
    clearTimeout(this.expiries.get(zoneId));
    this.timers.delete(zoneId);
    this.expiries.delete(zoneId);
    this.status.delete(zoneId);
    this.nextRefreshAt.delete(zoneId);
    this.expiresAt.delete(zoneId);
    this.zones.serving.forget(zoneId);
  }

  statusOf(zoneId: string): RefreshStatus {
    return this.status.get(zoneId) ?? { last_error: null, skipped_records: 0 };
  }

  timesOf(zoneId: string): RefreshTimes {
    const iso = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());
    return { next_refresh_time: iso(this.nextRefreshAt.get(zoneId)), expires_time: iso(this.expiresAt.get(zoneId)) };
  }

  /** Refreshes the zone now (`axfr`: the whole zone, whatever the serials say); resolves when that refresh is over. */
  refreshNow(zoneId: string, axfr = false): Promise<void> {
    const current = this.running.get(zoneId);
    if (current) {
      this.again.set(zoneId, axfr || (this.again.get(zoneId) ?? false));
      // Not the running refresh: it began before this call (with the settings and keys of then), so its outcome
      // says nothing of this one. The refresh that follows it is the one this call asked for.
      let next = this.followUp.get(zoneId);
      if (!next) {
        next = current.then(() => this.running.get(zoneId));
        this.followUp.set(zoneId, next);
      }
      return next;
    }
    this.nextRefreshAt.delete(zoneId);
    const run = this.refresh(zoneId, axfr).finally(() => {
      this.running.delete(zoneId);
      this.followUp.delete(zoneId);
      const more = this.again.get(zoneId);
      this.again.delete(zoneId);
      if (more !== undefined && !this.gone(zoneId)) void this.refreshNow(zoneId, more);
    });
    this.running.set(zoneId, run);
    return run;
  }

  private refreshSoon(zoneId: string): void {
    this.arm(zoneId, 0);
  }

  /** The next refresh in `seconds` (a primary's SOA refresh or retry), within the bounds: an SOA of 0 is 1 s, not a loop. */
  private schedule(zoneId: string, seconds: number): void {
    this.arm(zoneId, Math.min(Math.max(seconds, MIN_TIMER_S), MAX_TIMER_S) * 1000);
  }

  private arm(zoneId: string, ms: number): void {
    if (this.gone(zoneId)) return;
    clearTimeout(this.timers.get(zoneId));
    const t = setTimeout(() => void this.refreshNow(zoneId), ms);
    t.unref();
    this.timers.set(zoneId, t);
    this.nextRefreshAt.set(zoneId, Date.now() + ms);
  }

  /**
   * A NOTIFY (RFC 1996) for `q`'s zone from `remote`: acted on only for a secondary zone, from the address of one of
   * its primaries, signed with that primary's key when it has one (a NOTIFY from elsewhere, unsigned or wrongly
   * signed is answered REFUSED, or NOTAUTH with the TSIG error, and changes nothing). The answer echoes the question,
   * signed like the request.
   */
  notified(q: Decoded, msg: Buffer, remote: string): Buffer {
    const name = (q.questions![0].name ?? "").toLowerCase().replace(/\.$/, "");
    const zs = this.zones.named(name);
    const peers = zs && zs.zone.type === "secondary" ? this.directory.incomingPeers(zs.zone.id).filter((p) => p.ip && sameAddress(p.ip, remote)) : [];
    if (!zs || peers.length === 0) {
      this.ignoredNotify({ zone: name, remote }, "NOTIFY ignored: not a primary of a secondary zone here");
      return reply(q, Rcode.REFUSED);
    }
    const keys = peers.map((p) => this.directory.tsigKey(p.tsig_id)).filter((k): k is TsigKey => k !== undefined);
    let verified: ReturnType<typeof verifyRequest>;
    try {
      verified = verifyRequest(msg, (n) => keys.find((k) => k.name === n));
    } catch {
      return reply(q, Rcode.FORMERR);
    }
    if (verified.status === "refused") {
      this.ignoredNotify({ zone: name, remote, tsig_error: verified.error }, "NOTIFY ignored: bad TSIG");
      return refusalReply(msg, verified);
    }
    if (verified.status === "unsigned" && !peers.some((p) => !p.tsig_id)) {
      this.ignoredNotify({ zone: name, remote }, "NOTIFY ignored: unsigned, and the primary has a TSIG key");
      return reply(q, Rcode.REFUSED);
    }
    this.log.info({ zone: name, remote, serial: notifiedSerial(q) }, "NOTIFY from a primary; refreshing");
    void this.refreshNow(zs.zone.id);
    const out = reply(q, Rcode.NOERROR);
    return verified.status === "ok" ? sign(out, verified.key, { requestMac: verified.tsig.mac }).message : out;
  }

  /** A refused NOTIFY, logged at most once per interval with the count since the last line: UDP senders are forged at will. */
  private ignoredNotify(fields: Record<string, unknown>, message: string): void {
    this.notifyRefusals.hit((refused) => this.log.info({ ...fields, refused }, message));
  }

  /** One refresh: each primary in turn until one answers; then the next refresh (or retry) is scheduled. */
  private async refresh(zoneId: string, forceAxfr: boolean): Promise<void> {
    const zs = this.zones.get(zoneId);
    const incoming = this.directory.incomingOf(zoneId);
    if (!zs || !incoming || this.stopped) return;
    const errors: string[] = [];
    const peers = this.directory.incomingPeers(zoneId).filter((p) => p.ip);
    for (const peer of peers) {
      // A primary stored before the operator narrowed --dns-peer-allow is not connected to.
      const refused = this.refusedByPolicy(peer);
      if (refused) {
        errors.push(refused);
        continue;
      }
      try {
        const transferred = await this.refreshFrom(zs, peer, forceAxfr);
        if (this.gone(zoneId)) return this.droppedRefresh(zs);
        await this.directory.refreshed(zoneId, transferred);
        if (this.gone(zoneId)) return this.droppedRefresh(zs);
        this.status.set(zoneId, { ...this.statusOf(zoneId), last_error: null });
        this.updateServed(zoneId);
        const soa = zs.zone.settings.soa;
        this.schedule(zoneId, Math.min(soa.refresh, incoming.auto_refresh_seconds));
        return;
      } catch (err) {
        // The zone deleted meanwhile (replaceSecondary refuses a zone that is gone): nothing to report or retry.
        if (this.gone(zoneId)) return this.droppedRefresh(zs);
        const why = err instanceof XfrError ? err.message : String((err as Error)?.message ?? err);
        errors.push(`${peer.name} (${peer.ip}:${peer.port}): ${why}`);
        if (!(err instanceof XfrError)) this.log.warn({ err, zone: zs.zone.name }, "secondary zone refresh failed");
      }
    }
    const lastError = peers.length ? errors.join("; ") : "no primary with an address is configured";
    this.status.set(zoneId, { ...this.statusOf(zoneId), last_error: lastError });
    this.log.warn({ zone: zs.zone.name, why: lastError }, "secondary zone not refreshed; keeping what it holds");
    this.schedule(zoneId, this.transferredYet(zoneId) ? zs.zone.settings.soa.retry : FIRST_RETRY_S);
  }

  /**
   * Whether the zone was deleted (or the secondary stopped) since a refresh of it began. Every write a refresh makes
   * when it ends (status, refresh and expire timers, the served state, the directory's times) is keyed by the zone:
   * made after forget(), each would stay behind for a zone that no longer exists, a timer among them.
   */
  private gone(zoneId: string): boolean {
    return this.stopped || this.zones.get(zoneId) === undefined;
  }

  private droppedRefresh(zs: ZoneState): void {
    this.log.debug({ zone: zs.zone.name }, "secondary zone deleted while it was being refreshed; the refresh's outcome is dropped");
  }

  /** Why the address policy (--dns-peer-allow) forbids connecting to this primary, or undefined when it allows it. */
  private refusedByPolicy(peer: Peer): string | undefined {
    return this.peerAllowed(peer.ip!) ? undefined : `${peer.name} (${peer.ip}:${peer.port}): ${PEER_NOT_ALLOWED}`;
  }

  /**
   * When every primary of the zone that has an address is one the address policy forbids, why for each (the caller's
   * configuration, not a failure of the primaries); otherwise undefined.
   */
  allPrimariesRefused(zoneId: string): string[] | undefined {
    const peers = this.directory.incomingPeers(zoneId).filter((p) => p.ip);
    const refused = peers.map((p) => this.refusedByPolicy(p)).filter((why): why is string => why !== undefined);
    return peers.length > 0 && refused.length === peers.length ? refused : undefined;
  }

  /** Refreshes from one primary; whether records were taken in. Throws XfrError when the primary fails us. */
  private async refreshFrom(zs: ZoneState, peer: Peer, forceAxfr: boolean): Promise<boolean> {
    const base = { host: peer.ip!, port: peer.port, zone: zs.zone.name, key: this.directory.tsigKey(peer.tsig_id), limits: this.limits };
    const held = this.transferredYet(zs.zone.id);
    if (held && !forceAxfr) {
      const [soa] = await requestXfr({ ...base, type: "SOA" });
      if (soa?.type !== "SOA") throw new XfrError("the primary's answer to SOA has no SOA");
      const { serial } = soaOf(soa);
      if (!serialNewer(serial, zs.zone.serial)) return false;
      if (peer.ixfr_enable) {
        const ixfr = new IncomingTransfer(zs, "IXFR", this.skippedLogger(zs));
        await streamXfr({ ...base, type: "IXFR", soa: this.engine.soaRr(zs) as packet.Answer }, (rrs) => ixfr.take(rrs));
        // A lone SOA newer than ours, or differences from another serial: the whole zone instead.
        if (ixfr.usable()) {
          await this.apply(zs, ixfr, ixfr.isWhole() ? `IXFR (whole zone) from ${peer.name}` : `IXFR from ${peer.name}`);
          return true;
        }
      }
    }
    const axfr = new IncomingTransfer(zs, "AXFR", this.skippedLogger(zs));
    await streamXfr({ ...base, type: "AXFR" }, (rrs) => axfr.take(rrs));
    await this.apply(zs, axfr, `AXFR from ${peer.name}`);
    return true;
  }

  private skippedLogger(zs: ZoneState): (why: string) => void {
    return (why) => this.log.info({ zone: zs.zone.name, why }, "record of the primary not kept");
  }

  /**
   * A complete answer: the zone's records become what it says (keeping the id of every record that stays, so the
   * API's ids are stable), with the primary's SOA, in one store write.
   */
  private async apply(zs: ZoneState, transfer: IncomingTransfer, how: string): Promise<void> {
    const primary = transfer.primary();
    const changes = await transfer.changes();
    await this.zones.replaceSecondary(zs, primary, changes);
    const skipped = transfer.skipped;
    if (transfer.isWhole() && !this.gone(zs.zone.id)) this.status.set(zs.zone.id, { ...this.statusOf(zs.zone.id), skipped_records: skipped });
    this.log.info(
      {
        zone: zs.zone.name,
        serial: primary.serial,
        how,
        records: zs.records.size,
        added_or_changed: changes.upserts.length,
        removed: changes.deletes.length,
        skipped,
      },
      "secondary zone transferred",
    );
  }

  private transferredYet(zoneId: string): boolean {
    // Not the serial: 0 is a primary's serial like any other.
    return !!this.directory.incomingOf(zoneId)?.last_transferred_time;
  }

  /**
   * Serves the zone while it holds a transfer less than SOA expire old (from when a primary last answered), and
   * arms the timer that stops serving it at that moment; SERVFAIL otherwise.
   */
  private updateServed(zoneId: string): void {
    clearTimeout(this.expiries.get(zoneId));
    this.expiries.delete(zoneId);
    this.expiresAt.delete(zoneId);
    const zs = this.zones.get(zoneId);
    if (!zs) {
      // Not marked unserved: a zone that is gone is answered by no one, and the mark would outlive it.
      this.zones.serving.forget(zoneId);
      return;
    }
    const checked = this.directory.incomingOf(zoneId)?.checked_time;
    const expiresAt = checked && this.transferredYet(zoneId) ? Date.parse(checked) + zs.zone.settings.soa.expire * 1000 : 0;
    const served = expiresAt > Date.now();
    if (this.zones.serving.setServed(zoneId, served)) {
      if (!served) this.log.warn({ zone: zs.zone.name }, "secondary zone expired or not transferred yet: answering SERVFAIL");
      this.invalidate();
    }
    if (served) {
      const t = setTimeout(() => this.updateServed(zoneId), Math.min(expiresAt - Date.now() + 10, 2 ** 31 - 1));
      t.unref();
      this.expiries.set(zoneId, t);
      this.expiresAt.set(zoneId, expiresAt);
    }
  }
}

/** The serial a NOTIFY announces (its answer section may carry the new SOA), for the log. */
function notifiedSerial(q: Decoded): number | undefined {
  const soa = q.answers?.find((a) => a.type === "SOA") as { data?: { serial?: number } } | undefined;
  return soa?.data?.serial;
}

/** The answer to a NOTIFY: its id, opcode and question, QR and AA set (RFC 1996 §4.7). */
function reply(q: Decoded, rcode: number): Buffer {
  const flags = (4 << 11) | (1 << 10) | rcode;
  return packet.encode({ id: q.id, type: "response", flags, questions: q.questions ?? [], answers: [], authorities: [], additionals: [] } as packet.Packet);
}
