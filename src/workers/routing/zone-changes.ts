import type { Logger } from "../../core/logger.js";
import type { ZonesPort } from "../../dns/service.js";
import type { DomainRehoming } from "./domain-rehoming.js";
import type { RoutesStore } from "./store.js";

/**
 * What a change of the platform's DNS zones does to Workers' routes and Custom Domains. A deleted zone takes its
 * routes and domains with it (removed once, by the node it was deleted through). A zone that appears is read again
 * too: on another node, a route's notice can come before its zone does (table.ts leaves out routes of zones it does
 * not know); the node it was created through moves into it the Custom Domains its names now belong to.
 */
export function followZoneChanges(
  zones: Pick<ZonesPort, "onChange">,
  store: RoutesStore,
  rehoming: DomainRehoming,
  reload: () => Promise<void>,
  log: Logger,
): void {
  zones.onChange((zs, kind, origin) => {
    if (kind === "created") {
      // Made once, by the node the zone was created through; the others read the moved domains from its notice.
      if (origin === "local")
        void rehoming
          .run(zs.zone.name)
          .catch((err: unknown) => log.error({ err, zone: zs.zone.name }, "Custom Domains of a new zone's names were not moved to it"));
      return void reload();
    }
    if (kind !== "deleted") return;
    void (origin === "local" ? store.deleteZone(zs.zone.id) : Promise.resolve())
      .catch((err: unknown) => log.error({ err, zone: zs.zone.name }, "the Workers routes of a deleted zone were not removed"))
      .then(reload);
  });
}
