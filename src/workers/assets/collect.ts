import type { AssetsStore } from "./store.js";

/**
 * How long a body stays after a collection first finds no manifest naming it. Long enough that a node still serving
 * a replaced version (it reads bodies by content id, from its cache of that version's manifest) has moved on, and
 * that an upload whose session just expired can be deployed again without uploading its files again.
 */
export const ASSET_BODY_GRACE_MS = 60 * 60 * 1000;

export interface Collection {
  /** Bodies found unused for the first time. */
  marked: number;
  /** Bodies removed (row and content). */
  removed: number;
}

/**
 * Collects asset bodies no manifest names: those of Workers' replaced or deleted assets, and of uploads never deployed.
 * A body is removed on a collection at least `graceMs` after the one that first found it unused, if nothing named it
 * in between. Safe on several nodes at once: a removal checks, in its statement, that the body is still the one found
 * unused. A deploy racing a removal of a file it names (a session started against a body unused for the whole grace
 * time) is refused as incomplete, and the client's next upload sends the file again.
 */
export async function collectAssetBodies(store: AssetsStore, now = Date.now(), graceMs = ASSET_BODY_GRACE_MS): Promise<Collection> {
  const used = new Set<string>();
  const key = (accountId: string, hash: string) => `${accountId}\0${hash}`;
  for (const { accountId, manifest } of await store.manifestsInUse()) for (const path in manifest) used.add(key(accountId, manifest[path]!.hash));
  const unmark: { accountId: string; hash: string }[] = [];
  const mark: { accountId: string; hash: string }[] = [];
  let removed = 0;
  for (const b of await store.bodyStates()) {
    if (used.has(key(b.accountId, b.hash))) {
      if (b.orphanedAt !== null) unmark.push(b);
    } else if (b.orphanedAt === null) {
      mark.push(b);
    } else if (b.orphanedAt <= now - graceMs && (await store.removeBody(b.accountId, b.hash, b.orphanedAt))) {
      removed++;
    }
  }
  await store.markOrphaned(unmark, null);
  await store.markOrphaned(mark, now);
  return { marked: mark.length, removed };
}
