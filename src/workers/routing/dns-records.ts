import type { DnsRecord, ZonesPort, ZoneState } from "../../dns/service.js";
import type { Logger } from "../../core/logger.js";
import { RoutesErrors } from "./errors.js";
import type { CustomDomain } from "./store.js";

/**
 * The content of a Custom Domain's record, as the hosted platform shows it: a proxied AAAA to 100:: (the IPv6
 * discard prefix). Proxied, the name is answered with the edge's addresses (`--edge-ipv4`, `--edge-ipv6`), in
 * queries and in zone transfers alike (dns/nameserver/answer.ts edgeRrs).
 */
export const DOMAIN_RECORD_CONTENT = "100::";

/** A message of the v4 envelope's `messages`. */
export interface ApiMessage {
  code: number;
  message: string;
}

/** Codes of the notes an attach answers with (ours: the hosted platform has no such cases). */
export const DomainRecordNotes = {
  noEdgeAddresses: 100190,
  secondaryZone: 100191,
} as const;

type DomainRef = Pick<CustomDomain, "id" | "accountId" | "zoneId" | "hostname">;

const addressType = (r: DnsRecord) => r.type === "A" || r.type === "AAAA" || r.type === "CNAME";
/** A record that already stands for the edge the way a Custom Domain's does (one left by a crash, or made by hand as hosted users do): replaced without asking. */
const standIn = (r: DnsRecord) => r.type === "AAAA" && r.proxied && r.content === DOMAIN_RECORD_CONTENT;

/**
 * The DNS records of Custom Domains in zones this platform hosts: one proxied AAAA record per domain, with the
 * domain's id as its id, so that the record is the domain's exactly while a domain with that id and hostname is
 * attached (`managedBy`, which the records API consults to show it read-only and refuse to change it).
 *
 * The routes and the DNS records are separate stores (separate databases), so the two writes cannot share a
 * transaction. The order makes a crash between them harmless: attaching writes the record first, then the domain;
 * detaching removes the domain first, then the record. Either way what a crash can leave is a record without its
 * domain, which is no longer managed (no domain has its id), so the account sees an ordinary AAAA record and can
 * delete it, and attaching the hostname again replaces it (standIn). The other half, a domain without its record
 * (a domain attached before records were made, or whose record write failed after its zone was restored), is
 * made again at start (`repair`).
 */
export class DomainRecords {
  constructor(
    private readonly zones: ZonesPort,
    /** The edge's addresses; with none, a Custom Domain's record answers nothing. */
    private readonly edge: { ipv4: readonly string[]; ipv6: readonly string[] },
    /** The attached Custom Domain with this id (routing/table.ts keeps them in memory). */
    private readonly domainById: (id: string) => CustomDomain | undefined,
    private readonly log: Logger,
  ) {
    zones.addRecordManager((r) => this.managedBy(r));
  }

  /** What keeps a record: its Custom Domain, or undefined for the account's own records. */
  managedBy(r: DnsRecord): string | undefined {
    const d = this.domainById(r.id);
    return d && d.hostname === r.name && this.zoneOf(d)?.zone.id === r.zone_id ? `the Worker Custom Domain ${d.hostname} (Worker "${d.service}")` : undefined;
  }

  /**
   * The zone a domain's record belongs in: the one the DNS server answers its hostname from (the longest zone name
   * it ends with, ZonesPort.zoneFor), when that zone is the domain's account's. A record anywhere else (a parent
   * zone of the account that also holds a child zone enclosing the hostname) would never be answered. Zones of one
   * account may nest; zones of two accounts may not (ZoneService.createZone), so the longest match among all zones
   * is the longest among the account's whenever the account has one.
   */
  zoneOf(d: Pick<DomainRef, "accountId" | "hostname">): ZoneState | undefined {
    const zs = this.zones.zoneFor(d.hostname);
    return zs && zs.zone.account_id === d.accountId ? zs : undefined;
  }

  /**
   * Refuses, before anything is written, a domain whose hostname has A, AAAA or CNAME records of the account's own,
   * unless they are to be replaced (`override_existing_dns_record`).
   */
  check(d: DomainRef, override: boolean): void {
    const zs = this.zoneOf(d);
    if (zs && zs.zone.type !== "secondary") this.refusal(zs.at(d.hostname), d, zs.zone.name, override);
  }

  /**
   * Address records of the account's own at the hostname are refused unless replaced; a delegation there (NS below
   * the apex) always is, since it refers the name away whatever is beside it.
   */
  private refusal(here: readonly DnsRecord[], d: DomainRef, apex: string, override: boolean): void {
    if (d.hostname !== apex && here.some((r) => r.type === "NS")) throw RoutesErrors.hostnameDelegated(d.hostname);
    if (!override && here.some((r) => r.id !== d.id && addressType(r) && !standIn(r))) throw RoutesErrors.dnsRecordConflict(d.hostname);
  }

  /**
   * Makes the domain's record (nothing when it has one already: a domain moved to another Worker keeps it), in one
   * zone change that also removes the records it replaces. Returns whether it made one, and notes for the answer.
   */
  async attach(d: DomainRef, override: boolean): Promise<{ created: boolean; messages: ApiMessage[] }> {
    const zs = this.zoneOf(d);
    if (!zs) return { created: false, messages: [] };
    if (zs.zone.type === "secondary")
      return {
        created: false,
        messages: [
          {
            code: DomainRecordNotes.secondaryZone,
            message: `${zs.zone.name} is a secondary zone, whose records come from its primary: no DNS record was made for ${d.hostname}; point it at the edge on the primary`,
          },
        ],
      };
    const created = await this.zones.editRecords(zs, (draft) => {
      const here = draft.at(d.hostname);
      if (here.some((r) => r.id === d.id)) return false;
      this.refusal(here, d, zs.zone.name, override);
      for (const r of here) if (addressType(r)) draft.delete(r.id);
      draft.set(this.zones.record({ id: d.id, zoneId: zs.zone.id, name: d.hostname, type: "AAAA", content: DOMAIN_RECORD_CONTENT, ttl: 1, proxied: true }));
      return true;
    });
    const messages: ApiMessage[] = [];
    if (this.edge.ipv4.length + this.edge.ipv6.length === 0)
      messages.push({
        code: DomainRecordNotes.noEdgeAddresses,
        message: `The DNS record of ${d.hostname} was made, but this platform has no edge addresses configured (--edge-ipv4, --edge-ipv6): it answers no address until the operator sets them`,
      });
    return { created, messages };
  }

  /**
   * Removes the domain's record from the zone it belongs in and, when the domain was stored with another zone (one
   * attached in a parent zone before a child zone enclosed it), from that one too. A zone deleted, or a secondary
   * zone, has none.
   */
  async detach(d: DomainRef): Promise<void> {
    await this.removeRecord(this.zoneOf(d), d);
    await this.leaveStoredZone(d);
  }

  /**
   * Removes the domain's record from the zone it is stored with when that is no longer the zone its hostname is
   * answered from (a record there is never answered, and its id, one row of the DNS store, is wanted in the closest
   * zone).
   */
  async leaveStoredZone(d: DomainRef): Promise<void> {
    if (d.zoneId !== this.zoneOf(d)?.zone.id) await this.removeRecord(this.zones.get(d.zoneId), d);
  }

  private async removeRecord(zs: ZoneState | undefined, d: DomainRef): Promise<void> {
    if (!zs || zs.zone.account_id !== d.accountId || zs.zone.type === "secondary" || !zs.records.has(d.id)) return;
    await this.zones.editRecords(zs, (draft) => {
      if (draft.get(d.id)) draft.delete(d.id);
    });
  }

  /** Detaches records after their domains were removed; a failure is logged (the record is then an ordinary one the account can delete). */
  async detachAll(domains: readonly DomainRef[]): Promise<void> {
    for (const d of domains) {
      await this.detach(d).catch((err: unknown) =>
        this.log.warn({ err, hostname: d.hostname }, "the DNS record of a detached Custom Domain was not removed; the account can delete it"),
      );
    }
  }

  /**
   * Makes the records that attached domains lack (domains attached before the platform made records, or a write
   * that failed), and moves a domain whose zone is no longer the one its hostname is answered from (attached in a
   * parent zone by a release that did not pick the closest zone, or before a child zone of the account enclosed
   * it). A move removes the record in the old zone (it was never answered, and a record id is one row in the
   * DNS store), makes it in the closest zone, then stores the domain with that zone (`rehome`): a crash between
   * steps leaves a domain without its record or with its record in the closest zone (managed either way, as
   * managedBy goes by the hostname), which the next run finishes. Run at start and when a zone is created. A
   * hostname with records of the account's own is left as it is (they were made by hand, as the platform once
   * asked) and logged. Returns how many domains were stored with a new zone.
   */
  async repair(domains: readonly CustomDomain[], rehome: (d: CustomDomain, zone: ZoneState) => Promise<void>): Promise<number> {
    let moved = 0;
    for (const d of domains) {
      const zs = this.zoneOf(d);
      if (!zs || zs.zone.type === "secondary") continue;
      const misplaced = zs.zone.id !== d.zoneId;
      if (!misplaced && zs.records.has(d.id)) continue;
      try {
        await this.leaveStoredZone(d);
        if (!zs.records.has(d.id)) {
          await this.attach(d, false);
          this.log.info({ hostname: d.hostname, zone: zs.zone.name }, "made the missing DNS record of a Custom Domain");
        }
        if (misplaced) {
          await rehome(d, zs);
          moved++;
          this.log.info({ hostname: d.hostname, zone: zs.zone.name }, "a Custom Domain moved to the zone its hostname is answered from");
        }
      } catch (err) {
        this.log.warn(
          { err, hostname: d.hostname },
          "a Custom Domain's DNS record could not be made in the zone its hostname is answered from (its hostname has records of the account's, or a write failed)",
        );
      }
    }
    return moved;
  }
}
