import type { IncomingMessage } from "node:http";
import type { Logger } from "../../core/logger.js";
import type { ZonesPort } from "../../dns/service.js";
import type { WorkersRuntime } from "../runtime/runtime.js";
import { DomainRecords } from "./dns-records.js";
import { DomainRehoming } from "./domain-rehoming.js";
import { scriptOfHost } from "../runtime/proxy.js";
import { edgeScriptResolver } from "./edge-script.js";
import { removeScriptRoutes } from "./script-removal.js";
import type { RoutesStore } from "./store.js";
import { RouteTable } from "./table.js";
import { followZoneChanges } from "./zone-changes.js";

/**
 * Routes and Custom Domains, wired: hostnames of the platform's DNS zones served by a Worker of the zone's account.
 * The table answers which Worker an edge request is for; the domains' records live in their zones; zone changes and
 * deleted Workers take their routes along.
 */
export class WorkerRouting {
  readonly table: RouteTable;
  readonly records: DomainRecords;
  readonly rehoming: DomainRehoming;
  /** The Worker an edge request is for (edge-script.ts). */
  readonly edgeScript: (req: IncomingMessage) => string | undefined;

  constructor(
    readonly store: RoutesStore,
    /** The DNS zones routes and Custom Domains are in (the port dns/service.ts hands over). */
    readonly zones: ZonesPort,
    edgeAddresses: { ipv4: readonly string[]; ipv6: readonly string[] },
    runtime: WorkersRuntime,
    private readonly workersDomain: string,
    private readonly log: Logger,
  ) {
    this.table = new RouteTable(store, zones, log);
    this.records = new DomainRecords(zones, edgeAddresses, (id) => this.table.domain(id), log);
    this.rehoming = new DomainRehoming(store, this.records, () => this.reload());
    followZoneChanges(zones, store, this.rehoming, () => this.reload(), log);
    this.edgeScript = edgeScriptResolver(workersDomain, this.table, runtime);
  }

  /**
   * Whether `edgeScript` may answer a Worker for a request with this Host (as sent), on some path: its
   * `<script>.<workers domain>` name, or a route or Custom Domain of the table (as last read) that could match it.
   */
  mayServe(host: string | undefined): boolean {
    return scriptOfHost(host, this.workersDomain) !== undefined || this.table.mayMatch(host);
  }

  /** Reads the table again after a change; a failure is logged (the table keeps what it had). */
  reload(): Promise<void> {
    return this.table.reload().catch((err: unknown) => this.log.error({ err }, "could not read the Workers routes again"));
  }

  /** A deleted Worker's routes and Custom Domains go with it (script-removal.ts). */
  scriptRemoved(accountId: string, script: string): Promise<void> {
    return removeScriptRoutes(this.store, this.records, () => this.reload(), accountId, script);
  }
}
