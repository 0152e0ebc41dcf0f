import type { Bus } from "../../core/cluster/bus.js";
import type { Db } from "../../core/db/sqlite.js";
import type { Logger } from "../../core/logger.js";
import type { ZonesPort } from "../../dns/service.js";
import { SqliteRoutesStore } from "./sqlite-store.js";
import { RouteTable } from "./table.js";

/**
 * Workers' routes and Custom Domains as an edge thread keeps them (edge/threads/): read from the embedded state (opened
 * read only), kept current with the bus's notices, asked only whether a Worker may take a tenant's hostname (a thread
 * hands those connections to the main thread, where Workers run).
 */
export interface RouteReplica {
  mayMatch(host: string | undefined): boolean;
  /** Changes whenever the table is read again. */
  generation(): number;
  load(): Promise<void>;
  stop(): void;
}

export function openRouteReplica(deps: { db: Db; zones: ZonesPort; bus: Bus; log: Logger }): RouteReplica {
  const table = new RouteTable(new SqliteRoutesStore(deps.db), deps.zones, deps.log);
  const unsubscribe = table.follow(deps.bus);
  return {
    mayMatch: (host) => table.mayMatch(host),
    generation: () => table.generation,
    load: () => table.reload(),
    stop: unsubscribe,
  };
}
