import type { DnsConfig } from "../config.js";
import { effectiveTtl, AUTO_TTL, type DnsRecord, type RecordType } from "../model.js";
import { canonical, isInZone } from "../zones/names.js";
import { TYPES } from "../records/types.js";
import type { ZoneService } from "../zones/zone-service.js";
import type { ZoneState } from "../zones/zone-state.js";
import type { ServedZones } from "../zones/serving.js";
import { parseSvcParams, svcbRdata } from "../records/svcb.js";
import { NXNAME, type AnswerSigning, type ContentByName } from "./signing.js";

/** A resource record as dns-packet encodes it. */
export interface Rr {
  name: string;
  type: string;
  class: "IN";
  ttl: number;
  data: unknown;
}

export interface Answer {
  rcode: number;
  authoritative: boolean;
  answers: Rr[];
  authorities: Rr[];
  additionals: Rr[];
}

/** How a name the question asks about does not answer: the name is missing, or it lacks the type. */
type Negative = "nxdomain" | "nodata";

/** The proxy's answer for a hostname (src/edge/ports.ts, OriginLookup, says what each kind means). */
export type ProxyTarget =
  | { kind: "none" }
  | { kind: "unproxied"; zoneId: string; accountId: string; why: "paused" | "dns-only" | "no-record" }
  | { kind: "proxied"; zoneId: string; accountId: string; addresses: string[]; hostnames: string[] }
  | { kind: "cross-account"; zoneId: string; accountId: string };

export const Rcode = { NOERROR: 0, FORMERR: 1, SERVFAIL: 2, NXDOMAIN: 3, NOTIMP: 4, REFUSED: 5, NOTAUTH: 9 } as const;

/** dns-packet names types it has no codec for "UNKNOWN_<n>"; these are the ones we store. */
const WIRE_NAMES: Record<string, RecordType> = { UNKNOWN_64: "SVCB", UNKNOWN_65: "HTTPS", UNKNOWN_256: "URI", UNKNOWN_53: "SMIMEA", CERT: "CERT" };
const qtypeOf = (wire: string): string => WIRE_NAMES[wire] ?? wire;

const MAX_CHAIN = 8;

/**
 * Answers questions from the in-memory zones: authoritative data, NXDOMAIN vs NODATA with the SOA
 * (negative TTL per RFC 2308), CNAME chasing inside our zones, wildcards (RFC 4592), referrals below
 * delegations, proxied names answered with the edge addresses, and CNAME flattening.
 */
/** What the answers read of the edge's zone settings (edge/settings, handed over by platform.ts). */
export interface EdgeZoneSettings {
  /** Whether a zone's proxied names answer AAAA with the edge's IPv6 addresses (its `ipv6` setting). */
  ipv6(zoneId: string): boolean;
}

export class AnswerEngine {
  private readonly httpsRdata: Buffer;
  /** The HTTPS record of a proxied name of a zone whose `ipv6` setting is off: no ipv6hint. */
  private readonly httpsRdataIpv4: Buffer;
  private edgeSettings?: EdgeZoneSettings;
  /** Zones not served are answered SERVFAIL (zones/serving.ts: secondary zones not transferred yet, or expired). */
  private readonly served: ServedZones;

  constructor(
    private readonly zones: ZoneService,
    private readonly cfg: DnsConfig,
    /** Signs the answers of signed zones for queries with the DO bit (src/dns/dnssec, handed over by service.ts); none: nothing is signed. */
    private readonly dnssec?: AnswerSigning,
  ) {
    this.served = zones.serving;
    const v4 = cfg.edgeIpv4.length ? `ipv4hint=${cfg.edgeIpv4.join(",")}` : "";
    const v6 = cfg.edgeIpv6.length ? `ipv6hint=${cfg.edgeIpv6.join(",")}` : "";
    this.httpsRdata = svcbRdata(1, ".", parseSvcParams(`alpn="h3,h2" ${v4} ${v6}`));
    this.httpsRdataIpv4 = svcbRdata(1, ".", parseSvcParams(`alpn="h3,h2" ${v4}`));
  }

  /** The edge's zone settings, once the platform has them (until then every zone answers as by default). */
  useEdgeSettings(settings: EdgeZoneSettings): void {
    this.edgeSettings = settings;
  }

  /** Whether the zone's proxied names have the edge's IPv6 addresses now (its `ipv6` setting; answers and transfers alike). */
  edgeIpv6(zoneId: string): boolean {
    return this.edgeSettings?.ipv6(zoneId) ?? true;
  }

  /**
   * undefined: not our zone (REFUSED). `dnssecOk` (the query's DO bit): the answer of a signed zone carries its
   * DNSKEY set where asked, its denials of existence, and the RRSIG of every authoritative RRset in it.
   * `compactOk` (the query's CO bit, RFC 9824 §5): a compact denial of a name that does not exist (its NSEC lists
   * NXNAME) is answered NXDOMAIN rather than NOERROR, so clients that read only the rcode see it.
   */
  answer(qnameRaw: string, qtypeWire: string, dnssecOk = false, compactOk = false): Answer | undefined {
    const qname = canonical(qnameRaw);
    const zs = this.zones.zoneFor(qname);
    if (!zs) return undefined;
    if (!this.served.isServed(zs.zone.id)) return { rcode: Rcode.SERVFAIL, authoritative: false, answers: [], authorities: [], additionals: [] };
    const res: Answer = { rcode: Rcode.NOERROR, authoritative: true, answers: [], authorities: [], additionals: [] };
    const dnssec = dnssecOk ? this.dnssec : undefined;
    this.lookup(zs, qname, qtypeOf(qtypeWire), res, new Set(), 0, dnssec);
    if (dnssec) dnssec.signAnswer(res);
    if (dnssec && compactOk && res.authorities.some((r) => r.type === "NSEC" && (r.data as { rrtypes: string[] }).rrtypes.includes(NXNAME)))
      res.rcode = Rcode.NXDOMAIN;
    return res;
  }

  /** Whether the zone is signed (its transfers carry its signatures: dnssec/zone-transfer.ts). */
  isSigned(zs: ZoneState): boolean {
    return this.dnssec?.isSigned(zs.zone.id) ?? false;
  }

  /** A signed zone's transfer records (AnswerSigning.signedTransfer); undefined when the zone is not signed. */
  signedTransfer(zs: ZoneState, soa: Rr, content: ContentByName): Iterable<Rr> | undefined {
    return this.dnssec?.signedTransfer(zs, soa, content, this.negativeTtl(zs));
  }

  /** The TTL of negative answers and of NSEC records (RFC 2308, RFC 4035 §2.3): the smaller of the SOA TTL and minimum. */
  negativeTtl(zs: ZoneState): number {
    return Math.min(zs.zone.settings.soa.ttl, zs.zone.settings.soa.min_ttl);
  }

  soaRr(zs: ZoneState, ttl = zs.zone.settings.soa.ttl): Rr {
    const s = zs.zone.settings.soa;
    return {
      name: zs.zone.name,
      type: "SOA",
      class: "IN",
      ttl,
      data: {
        mname: s.mname ?? this.cfg.nameServers[0],
        rname: s.rname,
        serial: zs.zone.serial,
        refresh: s.refresh,
        retry: s.retry,
        expire: s.expire,
        minimum: s.min_ttl,
      },
    };
  }

  /** The apex NS set: the platform's name servers (and any stored), or a secondary zone's own, as its primary has them. */
  apexNs(zs: ZoneState): Rr[] {
    if (zs.zone.type === "secondary") return zs.at(zs.zone.name).flatMap((r) => (r.type === "NS" ? [this.rr(r, zs.zone.name)] : []));
    const ttl = zs.zone.settings.ns_ttl;
    const names = new Set(this.cfg.nameServers);
    for (const r of zs.at(zs.zone.name)) if (r.type === "NS") names.add(r.content);
    return [...names].map((ns) => ({ name: zs.zone.name, type: "NS", class: "IN", ttl, data: ns }));
  }

  rr(r: DnsRecord, owner: string): Rr {
    const w = TYPES[r.type].wire(r);
    return { name: owner, type: w.type, class: "IN", ttl: effectiveTtl(r), data: w.data };
  }

  /** Whether a name's A/AAAA/CNAME are served by the platform's edge. */
  isProxied(zs: Pick<ZoneState, "zone">, recs: readonly DnsRecord[]): boolean {
    return !zs.zone.paused && recs.some((r) => r.proxied);
  }

  /**
   * The edge addresses a proxied name of `zoneId` answers queries with: edgeRrs, without the IPv6 ones while the
   * zone's `ipv6` setting is off. (Zone transfers send the same: the setting is taken into their snapshot,
   * nameserver/axfr.ts, and a change of it gives the zone a new serial, dns/service.ts.)
   */
  private answeredEdgeRrs(zoneId: string, recs: readonly DnsRecord[], owner: string, qtype: "A" | "AAAA"): Rr[] {
    return qtype === "AAAA" && !this.edgeIpv6(zoneId) ? [] : this.edgeRrs(recs, owner, qtype);
  }

  /** The edge addresses a proxied name answers with (settings.ipv4_only/ipv6_only drop one family). */
  edgeRrs(recs: readonly DnsRecord[], owner: string, qtype: "A" | "AAAA"): Rr[] {
    const proxied = recs.filter((r) => r.proxied);
    if (qtype === "A" && proxied.every((r) => r.settings.ipv6_only)) return [];
    if (qtype === "AAAA" && proxied.every((r) => r.settings.ipv4_only)) return [];
    const addrs = qtype === "A" ? this.cfg.edgeIpv4 : this.cfg.edgeIpv6;
    return addrs.map((a) => ({ name: owner, type: qtype, class: "IN", ttl: AUTO_TTL, data: a }));
  }

  /**
   * The SOA of a negative answer (RFC 2308), and in a signed zone asked with DO the NSEC that proves it: compact
   * denial (RFC 9824), an NSEC at the name itself listing the types it has, or only NXNAME when it does not exist,
   * so a missing name is answered NOERROR like a missing type, and no other name of the zone is revealed.
   */
  private negative(zs: ZoneState, res: Answer, qname: string, kind: Negative, dnssec?: AnswerSigning): void {
    const ttl = this.negativeTtl(zs);
    res.authorities.push(this.soaRr(zs, ttl));
    if (dnssec?.isSigned(zs.zone.id)) res.authorities.push(this.nsec(qname, ttl, kind === "nxdomain" ? [NXNAME] : this.typesAt(zs, qname)));
    else if (kind === "nxdomain") res.rcode = Rcode.NXDOMAIN;
  }

  private nsec(owner: string, ttl: number, types: string[]): Rr {
    return { name: owner, type: "NSEC", class: "IN", ttl, data: { nextDomain: `\u0000.${owner}`, rrtypes: [...types, "RRSIG", "NSEC"] } };
  }

  /**
   * The types a name of a signed zone answers with, as its NSEC lists them: exactly the ones a query gets an answer
   * of that type for at that name (synthesized ones included: proxied A/AAAA, HTTPS, flattened addresses), since a
   * validator trusts the list both ways. At a delegation: the NS and DS the parent side holds.
   */
  private typesAt(zs: ZoneState, name: string): string[] {
    const here = zs.at(name);
    if (name !== zs.zone.name && here.some((r) => r.type === "NS")) return [...new Set(here.map((r) => this.rr(r, name).type))];
    const recs = this.wildcardOrOwn(zs, name) ?? [];
    const candidates = new Set<string>(["A", "AAAA", "HTTPS", "CNAME", ...recs.map((r) => r.type)]);
    if (name === zs.zone.name) for (const t of ["SOA", "NS", "DNSKEY"]) candidates.add(t);
    // A flattened CNAME makes no alias of its name (it answers addresses): validators read CNAME in an NSEC as
    // "this name is an alias" and would refuse the denial.
    const cname = recs.find((r) => r.type === "CNAME");
    if (cname && this.flattens(zs, name, cname)) candidates.delete("CNAME");
    const found = new Set<string>();
    for (const t of candidates) {
      const scratch: Answer = { rcode: Rcode.NOERROR, authoritative: true, answers: [], authorities: [], additionals: [] };
      this.lookup(zs, name, t, scratch, new Set(), 0);
      for (const rr of scratch.answers) if (rr.name === name && qtypeOf(rr.type) === t) found.add(rr.type);
    }
    return [...found];
  }

  /**
   * Where the edge forwards a request for `host` (the proxy's view of the same data the answers come from: exact
   * names, wildcards, delegations, paused zones, CNAME chains): the proxied A/AAAA records' addresses, or for a
   * proxied CNAME the addresses at the end of its chain inside our zones, or its target's name when the chain leaves them.
   */
  originOf(hostRaw: string): ProxyTarget {
    const host = canonical(hostRaw);
    const zs = this.zones.zoneFor(host);
    if (!zs) return { kind: "none" };
    const zone = { zoneId: zs.zone.id, accountId: zs.zone.account_id };
    if (zs.zone.paused) return { kind: "unproxied", ...zone, why: "paused" };
    const recs = this.cut(zs, host, "A") ? [] : (this.wildcardOrOwn(zs, host) ?? []);
    const proxied = recs.filter((r) => r.proxied && (r.type === "A" || r.type === "AAAA" || r.type === "CNAME"));
    if (proxied.length === 0) return { kind: "unproxied", ...zone, why: recs.length ? "dns-only" : "no-record" };
    const addresses = proxied.filter((r) => r.type !== "CNAME").map((r) => r.content);
    const hostnames: string[] = [];
    const cname = proxied.find((r) => r.type === "CNAME");
    if (cname) {
      // The chain's end inside our zones (proxied or not: its records hold the origin's addresses), else a name outside.
      let target = canonical(cname.content);
      const seen = new Set([host]);
      for (let i = 0; i < MAX_CHAIN && !seen.has(target); i++) {
        seen.add(target);
        const tz = this.zones.zoneFor(target);
        if (!tz) {
          hostnames.push(target);
          break;
        }
        // Another tenant's zone: its records (a proxied name's hidden origin among them) are not this zone's origin.
        if (tz.zone.account_id !== zs.zone.account_id) return { kind: "cross-account", ...zone };
        const at = this.wildcardOrOwn(tz, target) ?? [];
        const next = at.find((r) => r.type === "CNAME");
        if (next) {
          target = canonical(next.content);
          continue;
        }
        addresses.push(...at.filter((r) => r.type === "A" || r.type === "AAAA").map((r) => r.content));
        break;
      }
    }
    return { kind: "proxied", ...zone, addresses, hostnames };
  }

  /** Whether a CNAME is answered flattened: always at the apex, elsewhere by its setting or the zone's. */
  private flattens(zs: ZoneState, name: string, cname: DnsRecord): boolean {
    return name === zs.zone.name || !!cname.settings.flatten_cname || zs.zone.settings.flatten_all_cnames;
  }

  private wildcardOrOwn(zs: ZoneState, name: string): readonly DnsRecord[] | undefined {
    const own = zs.at(name);
    return own.length || zs.exists(name) ? own : this.wildcard(zs, name);
  }

  /** The closest delegation point (non-apex NS) at or above qname; DS at the cut belongs to the parent. */
  private cut(zs: ZoneState, qname: string, qtype: string): string | undefined {
    const apex = zs.zone.name;
    if (qname === apex) return undefined;
    const labels = qname.slice(0, -(apex.length + 1)).split(".");
    for (let i = labels.length - 1; i >= 0; i--) {
      const n = `${labels.slice(i).join(".")}.${apex}`;
      if (n === qname && qtype === "DS") return undefined;
      if (zs.at(n).some((r) => r.type === "NS")) return n;
    }
    return undefined;
  }

  /** Records a wildcard gives a name that does not exist: `*.<closest encloser>` (RFC 4592). */
  private wildcard(zs: ZoneState, qname: string): readonly DnsRecord[] | undefined {
    let n = qname;
    while (n !== zs.zone.name) {
      n = n.slice(n.indexOf(".") + 1);
      if (zs.exists(n)) {
        const w = zs.at(`*.${n}`);
        return w.length ? w : undefined;
      }
    }
    return undefined;
  }

  private lookup(zs: ZoneState, qname: string, qtype: string, res: Answer, seen: Set<string>, depth: number, dnssec?: AnswerSigning): void {
    seen.add(qname);
    const cut = this.cut(zs, qname, qtype);
    if (cut) {
      if (res.answers.length === 0) {
        res.authoritative = false;
        const ns = zs.at(cut).filter((r) => r.type === "NS");
        res.authorities.push(...ns.map((r) => this.rr(r, cut)));
        if (dnssec?.isSigned(zs.zone.id)) {
          // The parent side of a signed delegation: its DS, or the NSEC proving it has none (an insecure delegation).
          const ds = zs.at(cut).filter((r) => r.type === "DS");
          const negTtl = Math.min(zs.zone.settings.soa.ttl, zs.zone.settings.soa.min_ttl);
          if (ds.length) res.authorities.push(...ds.map((r) => this.rr(r, cut)));
          else res.authorities.push(this.nsec(cut, negTtl, this.typesAt(zs, cut)));
        }
        for (const r of ns)
          if (isInZone(r.content, zs.zone.name))
            for (const g of zs.at(r.content)) if (g.type === "A" || g.type === "AAAA") res.additionals.push(this.rr(g, g.name));
      }
      return;
    }
    const apex = qname === zs.zone.name;
    let recs = zs.at(qname);
    if (recs.length === 0 && !apex && !zs.exists(qname)) {
      const w = this.wildcard(zs, qname);
      if (!w) {
        this.negative(zs, res, qname, "nxdomain", dnssec);
        return;
      }
      recs = w;
    }
    const out: Rr[] = [];
    const any = qtype === "ANY";
    if (apex && (qtype === "SOA" || any)) out.push(this.soaRr(zs));
    if (apex && (qtype === "NS" || any)) out.push(...this.apexNs(zs));
    const signed = this.dnssec?.isSigned(zs.zone.id) ?? false;
    // A signed zone's DNSKEY set is the platform's keys (stored DNSKEY records at its apex are not served then).
    if (apex && signed && (qtype === "DNSKEY" || any)) out.push(...this.dnssec!.dnskeys(zs.zone.id, qname));
    const hidden = (r: DnsRecord) => apex && (r.type === "NS" || (r.type === "DNSKEY" && signed));
    const stored = (t: string) => recs.filter((r) => r.type === t && !hidden(r));

    if (this.isProxied(zs, recs)) {
      if (qtype === "A" || any) out.push(...this.answeredEdgeRrs(zs.zone.id, recs, qname, "A"));
      if (qtype === "AAAA" || any) out.push(...this.answeredEdgeRrs(zs.zone.id, recs, qname, "AAAA"));
      if (qtype === "HTTPS" && stored("HTTPS").length === 0)
        out.push({ name: qname, type: "UNKNOWN_65", class: "IN", ttl: AUTO_TTL, data: this.edgeIpv6(zs.zone.id) ? this.httpsRdata : this.httpsRdataIpv4 });
      for (const r of recs) if (r.type !== "A" && r.type !== "AAAA" && r.type !== "CNAME" && (any || r.type === qtype)) out.push(this.rr(r, qname));
    } else {
      const cname = recs.find((r) => r.type === "CNAME");
      if (cname && qtype !== "CNAME" && !any) {
        if (this.flattens(zs, qname, cname)) {
          if (qtype === "A" || qtype === "AAAA") out.push(...this.flattened(zs.zone.id, cname, qname, qtype));
        } else {
          res.answers.push(this.rr(cname, qname));
          const tz = this.zones.zoneFor(cname.content);
          if (tz && !seen.has(cname.content) && depth < MAX_CHAIN) this.lookup(tz, cname.content, qtype, res, seen, depth + 1, dnssec);
          return;
        }
      } else {
        for (const r of recs) if ((any || r.type === qtype) && !hidden(r)) out.push(this.rr(r, qname));
      }
    }
    if (out.length === 0) this.negative(zs, res, qname, "nodata", dnssec);
    else res.answers.push(...out);
  }

  /**
   * A flattened CNAME answers with the addresses at the end of its chain, under its own name, with the
   * smallest TTL met on the way. Targets outside our zones are not resolved (no recursion here).
   */
  private flattened(ownerZoneId: string, cname: DnsRecord, owner: string, qtype: "A" | "AAAA"): Rr[] {
    let ttl = effectiveTtl(cname);
    let target = cname.content;
    const seen = new Set([owner]);
    for (let i = 0; i < MAX_CHAIN && !seen.has(target); i++) {
      seen.add(target);
      const tz = this.zones.zoneFor(target);
      if (!tz) return [];
      const recs = tz.at(target);
      // The name asked is the owner's: its zone's `ipv6` setting says whether the edge answers it over IPv6.
      if (this.isProxied(tz, recs)) return this.answeredEdgeRrs(ownerZoneId, recs, owner, qtype);
      const next = recs.find((r) => r.type === "CNAME");
      if (next) {
        ttl = Math.min(ttl, effectiveTtl(next));
        target = next.content;
        continue;
      }
      return recs.filter((r) => r.type === qtype).map((r) => ({ ...this.rr(r, owner), ttl: Math.min(ttl, effectiveTtl(r)) }));
    }
    return [];
  }
}
