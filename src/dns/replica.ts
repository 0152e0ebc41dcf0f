import { isIP } from "node:net";
import type { Bus } from "../core/cluster/bus.js";
import type { Db } from "../core/db/sqlite.js";
import type { Logger } from "../core/logger.js";
import type { PlatformHostnames } from "../core/service.js";
import { readDnsConfig, type DnsOptions } from "./config.js";
import { AnswerEngine, type ProxyTarget } from "./nameserver/answer.js";
import { SqliteDnsStore } from "./sqlite-store.js";
import { ZoneService } from "./zones/zone-service.js";
import { ZoneSync } from "./zones/zone-sync.js";
import { zonesPort, type ZonesPort } from "./zones/zones-port.js";

/**
 * The zones as an edge thread keeps them (edge/threads/): read from the embedded state's DNS database (opened read
 * only), kept current with the bus's notices as another node's are (ZoneSync), and asked what the proxy asks DNS:
 * which zone a name is in and what a proxied name's origin is.
 */
export interface ZoneReplica {
  zoneOf(host: string): { id: string; name: string; accountId: string } | undefined;
  originOf(host: string): ProxyTarget;
  /** Changes whenever a zone or record changes (what `originOf` and `zoneOf` answer may have changed). */
  generation(): number;
  accountOf(zoneId: string): string | undefined;
  nameOf(zoneId: string): string | undefined;
  /** The edge addresses and --platform-ranges: never an origin. */
  isPlatformAddress(ip: string): boolean;
  /** What Workers' route table reads of the zones. */
  zonesPort: ZonesPort;
  load(): Promise<void>;
  stop(): void;
}

export function openZoneReplica(deps: { options: DnsOptions; db: Db; bus: Bus; log: Logger; platformHostnames: PlatformHostnames }): ZoneReplica {
  const cfg = readDnsConfig(deps.options);
  const zones = new ZoneService(new SqliteDnsStore(deps.db), { platformHostnames: deps.platformHostnames });
  // Subscribed before the first read: a change between the read and the subscription is not missed.
  const sync = new ZoneSync(zones, deps.bus, deps.log);
  const engine = new AnswerEngine(zones, cfg);
  return {
    zoneOf(host) {
      const zone = zones.zoneFor(host)?.zone;
      return zone && { id: zone.id, name: zone.name, accountId: zone.account_id };
    },
    originOf: (host) => engine.originOf(host),
    generation: () => zones.generation,
    accountOf: (zoneId) => zones.get(zoneId)?.zone.account_id,
    nameOf: (zoneId) => zones.get(zoneId)?.zone.name,
    isPlatformAddress(ip) {
      const family = isIP(ip);
      return family !== 0 && cfg.platformAddresses.check(ip, family === 6 ? "ipv6" : "ipv4");
    },
    zonesPort: zonesPort(zones),
    load: () => zones.load(),
    stop: () => sync.stop(),
  };
}
