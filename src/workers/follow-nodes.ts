import type { Bus } from "../core/cluster/bus.js";
import type { Logger } from "../core/logger.js";
import type { ScriptDeployer } from "./deployer.js";
import { changedScript, WORKERS_AREA } from "./pg-store.js";
import type { CronClock } from "./triggers/clock.js";

/**
 * Keeps this node running what the other nodes deploy: a notice `script:<name>` (a version, a secret, triggers or
 * a deletion committed through another node) makes the deployer run the stored version of that script (a new
 * workerd beside the old one, so no request is dropped) and the cron clock reload its triggers; a `resync` (notices
 * were lost while the bus reconnected) does it for every script. Notices of this node's own changes are skipped:
 * it ran the new version before committing it. Returns the unsubscribe function.
 */
export function followOtherNodes(bus: Bus, deployer: ScriptDeployer, clock: CronClock, log: Logger): () => void {
  const reloadClock = () => clock.reload().catch(() => undefined); // the clock logs its own failure
  return bus.subscribe(WORKERS_AREA, (event) => {
    if (event.type === "resync") {
      void deployer
        .syncAll()
        .catch((err: unknown) => log.error({ err: (err as Error).message }, "could not reload the worker scripts after a resync"))
        .then(reloadClock);
      return;
    }
    if (event.origin === bus.nodeId) return;
    const name = changedScript(event.what);
    if (name === undefined) return log.warn({ what: event.what }, "ignored a workers change notice this node does not know");
    void deployer
      .sync(name)
      .then(
        () => log.debug({ script: name, origin: event.origin }, "worker script synced with a change made on another node"),
        (err: unknown) => log.error({ script: name, err: (err as Error).message }, "could not run the version another node deployed"),
      )
      .then(reloadClock);
  });
}
