import type { Logger } from "../core/logger.js";
import { collectAssetBodies } from "./assets/collect.js";
import type { AssetsStore } from "./assets/store.js";
import type { WorkersStore } from "./store.js";

/** How often module bytes no record names are looked for (they are removed an hour after they were written). */
const GC_INTERVAL_MS = 60 * 60 * 1000;

/**
 * Removes, hourly from the start, module bytes whose record never committed (a crash, or a commit that failed after
 * the upload started them) and static asset files no Worker uses. Runs in the background: listing a bucket can be
 * slow, and the start does not depend on it. Returns how to stop.
 */
export function startContentSweep(scripts: WorkersStore, assets: AssetsStore, log: Logger): () => void {
  const sweep = async () => {
    const removed = await scripts.gcContent();
    if (removed) log.info({ removed }, "removed unreferenced worker module files");
    const assetBodies = await collectAssetBodies(assets);
    if (assetBodies.marked || assetBodies.removed)
      log.info(assetBodies, "static asset files no Worker uses: marked newly unused, removed after the grace time");
  };
  const sweepLogged = () => void sweep().catch((err: unknown) => log.warn({ err }, "worker file sweep failed"));
  sweepLogged();
  const timer = setInterval(sweepLogged, GC_INTERVAL_MS);
  timer.unref();
  return () => clearInterval(timer);
}
