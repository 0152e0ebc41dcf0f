import type { OptionValues } from "../core/cli/command.js";
import type { EdgeService, PlatformHostnames } from "../core/service.js";
import { readEdgeConfig, type AreaHostnames, type serveOptions } from "./config.js";
import type { HttpRequestEvent } from "./analytics/http-requests.js";
import { EdgeDispatch, type TenantZone, type PlatformHandlers, type RawHandler, type UpgradeHandler } from "./hostnames/dispatch.js";
import { Hostnames } from "./hostnames/plan.js";
import type { EdgeRequestCounter } from "./metrics.js";

/**
 * The edge area: the hostname plan and the one dispatch by Host (hostnames/); later the proxy to origins and zone
 * settings. Made first in platform.ts, as the other areas are given its `PlatformHostnames` port.
 */
export interface EdgeArea extends EdgeService {
  /** The port the areas check tenants' names with (zones, records, Custom Domains, routes, certificates). */
  readonly platformHostnames: PlatformHostnames;
  /** What app.ts hands every request and upgrade to first. */
  readonly dispatch: EdgeDispatch;
  /**
   * Once DNS and the services exist: which names are tenants' (`zoneOf` names the zone a name is at or under), the
   * handlers of the platform's services, and where tenants' requests are counted (the analytics' rollups).
   */
  attach(deps: {
    zoneOf: (host: string) => TenantZone | undefined;
    /** Changes whenever any zone is created, changed or deleted (what `zoneOf` answers may have changed). */
    zonesGeneration?: () => number;
    handlers: PlatformHandlers;
    traffic?: (event: HttpRequestEvent) => void;
  }): void;
  /** Adds a handler of tenants' hostnames, after Workers (the proxy to origins, edge/origin/). */
  addTenantHandler(handler: RawHandler): void;
  /** Adds a handler of tenants' upgrades, after Workers' WebSockets (the proxy's WebSocket pass-through). */
  addTenantUpgradeHandler(handler: UpgradeHandler): void;
}

export function createEdgeService(options: OptionValues<typeof serveOptions>, areas: AreaHostnames, requests?: EdgeRequestCounter): EdgeArea {
  const { plan } = readEdgeConfig(options, areas);
  let isTenantName: (host: string) => boolean = () => false;
  const hostnames = new Hostnames(plan, (host) => isTenantName(host));
  const dispatch = new EdgeDispatch(hostnames, requests);
  return {
    name: "edge",
    platformHostnames: {
      isPlatformHostname: (name) => hostnames.isPlatformHostname(name),
      refuse: (use, name) => hostnames.refuse(use, name),
    },
    dispatch,
    attach(deps) {
      isTenantName = (host) => deps.zoneOf(host) !== undefined;
      dispatch.attach(deps.handlers, { zoneOf: deps.zoneOf, traffic: deps.traffic, zonesGeneration: deps.zonesGeneration });
    },
    addTenantHandler: (handler) => dispatch.addTenantHandler(handler),
    addTenantUpgradeHandler: (handler) => dispatch.addTenantUpgradeHandler(handler),
    describe: () => ({
      api_hostnames: plan.apiHostnames.join(", "),
      ...(plan.dashboardHostname && { dashboard_hostname: plan.dashboardHostname }),
    }),
  };
}
