import type { Bus } from "../../core/cluster/bus.js";
import type { Logger } from "../../core/logger.js";
import { inZone, parsePattern, RouteIndex, type RouteTarget } from "./pattern.js";
import { ROUTES_AREA } from "./pg-store.js";
import type { CustomDomain, RoutesStore } from "./store.js";

/** What routing needs of the DNS area's zones (dns/zones/zone-service.ts keeps them in memory). */
export interface ZoneDirectory {
  /** The zone with this id: its name and account; undefined when there is none. */
  byId(zoneId: string): { name: string; accountId: string } | undefined;
}

const NO_ZONES: ReadonlySet<string> = new Set();

/**
 * The routing table of the edge port, in memory (RouteIndex): read whole from the store at start, after every change
 * made here, and after every change notice from another node (or a resync). A route or domain whose zone is gone or
 * now belongs to another account is left out, so a table read while a zone's deletion is being applied never routes
 * a hostname of the zone's next owner to the last one's Worker.
 */
export class RouteTable {
  private index = new RouteIndex([], []);
  private workersDevOff: ReadonlySet<string> = new Set();
  /** The zones each script is routed in (a route or Custom Domain of its account's zone): its own zones. */
  private zonesByScript: ReadonlyMap<string, ReadonlySet<string>> = new Map();
  /** The Custom Domains served, by id (their DNS records have the same ids: dns-records.ts). */
  private domains: ReadonlyMap<string, CustomDomain> = new Map();
  private domainsByHostname: ReadonlyMap<string, CustomDomain> = new Map();
  private readonly listeners: (() => void)[] = [];
  private reading: Promise<void> | undefined;
  private again = false;
  private reads = 0;

  constructor(
    private readonly store: RoutesStore,
    private readonly zones: ZoneDirectory,
    private readonly log: Logger,
  ) {}

  match(host: string | undefined, target: string): RouteTarget | undefined {
    return this.index.match(host, target);
  }

  /** Whether `match` may answer a target for this Host on some path (false: on none). */
  mayMatch(host: string | undefined): boolean {
    return this.index.mayMatch(host);
  }

  /** Grows with every read of the table (what `match` and `mayMatch` answer from). */
  get generation(): number {
    return this.reads;
  }

  /** The attached Custom Domain with this id whose zone is its account's, as of the last read. */
  domain(id: string): CustomDomain | undefined {
    return this.domains.get(id);
  }

  /** The attached Custom Domain of this hostname (lower case) whose zone is its account's, as of the last read. */
  domainAt(hostname: string): CustomDomain | undefined {
    return this.domainsByHostname.get(hostname);
  }

  /** Calls `listener` after every read of the table (the certificates of Custom Domains follow it). */
  onReload(listener: () => void): void {
    this.listeners.push(listener);
  }

  /** The zones where `script` has a route or an attached Custom Domain, as of the last read. */
  zonesOf(script: string): ReadonlySet<string> {
    return this.zonesByScript.get(script) ?? NO_ZONES;
  }

  /** Whether a Worker is served at `<name>.<workers domain>` (names are unique platform-wide). */
  atWorkersDomain(name: string): boolean {
    return !this.workersDevOff.has(name);
  }

  /** Reads the table again; reloads asked for while one runs are made once, after it. */
  reload(): Promise<void> {
    if (this.reading) {
      this.again = true;
      return this.reading;
    }
    this.reading = (async () => {
      try {
        do {
          this.again = false;
          const [{ index, domains, zonesByScript }, off] = await Promise.all([this.read(), this.store.workersDevOff()]);
          this.index = index;
          this.zonesByScript = zonesByScript;
          this.domains = domains;
          this.domainsByHostname = new Map([...domains.values()].map((d) => [d.hostname, d]));
          this.workersDevOff = new Set(off.map((o) => o.script));
          this.reads++;
        } while (this.again);
        for (const l of this.listeners) l();
      } finally {
        this.reading = undefined;
      }
    })();
    return this.reading;
  }

  private async read(): Promise<{ index: RouteIndex; domains: Map<string, CustomDomain>; zonesByScript: Map<string, Set<string>> }> {
    const [routes, domains] = await Promise.all([this.store.allRoutes(), this.store.allDomains()]);
    const owned = (zoneId: string, accountId: string, host: string) => {
      const zone = this.zones.byId(zoneId);
      return zone !== undefined && zone.accountId === accountId && inZone(host, zone.name);
    };
    const zonesByScript = new Map<string, Set<string>>();
    const routedIn = (script: string, zoneId: string) => {
      let zones = zonesByScript.get(script);
      if (!zones) zonesByScript.set(script, (zones = new Set()));
      zones.add(zoneId);
    };
    const parsedRoutes = [];
    for (const r of routes) {
      const pattern = parsePattern(r.pattern);
      // Patterns are checked when written; one that no longer parses (a rule made stricter) is skipped, not fatal.
      if (typeof pattern === "string") {
        this.log.warn({ route: r.id, pattern: r.pattern }, "a stored route pattern does not parse; it is not served");
        continue;
      }
      if (owned(r.zoneId, r.accountId, pattern.host)) {
        parsedRoutes.push({ pattern, target: { accountId: r.accountId, script: r.script } });
        if (r.script) routedIn(r.script, r.zoneId);
      }
    }
    const live = domains.filter((d) => owned(d.zoneId, d.accountId, d.hostname));
    for (const d of live) routedIn(d.service, d.zoneId);
    const liveDomains = live.map((d) => ({ hostname: d.hostname, target: { accountId: d.accountId, script: d.service } }));
    return { index: new RouteIndex(parsedRoutes, liveDomains), domains: new Map(live.map((d) => [d.id, d])), zonesByScript };
  }

  /** Reloads on other nodes' changes and on resyncs; returns the unsubscribe function. */
  follow(bus: Bus): () => void {
    return bus.subscribe(ROUTES_AREA, (event) => {
      if (event.type === "change" && event.origin === bus.nodeId) return;
      // Returned: the bus's barrier (and an edge thread's ack) waits for the table read again.
      return this.reload().catch((err: unknown) => this.log.error({ err }, "could not read the Workers routes again"));
    });
  }
}
