import { capnpString } from "../runtime/capnp-string.js";

/** What workerd needs to run a script's Durable Objects. */
export interface RuntimeDurableObjects {
  /** Absolute directory of the script's objects: one subdirectory per namespace, named by its uniqueKey (workerd's layout). */
  storageDir: string;
  namespaces: { className: string; uniqueKey: string; enableSql: boolean }[];
}

/**
 * Where one workerd process keeps the objects: on disk (the live version), or in memory for the run that only checks
 * that a new version starts (so a version that never goes live never opens the objects' files).
 */
export type DurableObjectStorageMode = "disk" | "memory";

const STORAGE_SERVICE = "durable-object-storage";

/**
 * The services and Worker fields of workerd's config for `objects`: the namespaces (`durableObjectNamespaces`, the
 * SQL API on for SQLite-backed classes) and their storage (a writable disk service on `storageDir`, or in memory).
 */
export function durableObjectsWorkerd(objects: RuntimeDurableObjects, mode: DurableObjectStorageMode): { services: string[]; workerFields: string } {
  const namespaces = objects.namespaces.map(
    (n) => `(className = ${capnpString(n.className)}, uniqueKey = ${capnpString(n.uniqueKey)}, enableSql = ${n.enableSql})`,
  );
  const storage = mode === "disk" ? `(localDisk = ${capnpString(STORAGE_SERVICE)})` : "(inMemory = void)";
  return {
    services: mode === "disk" ? [`(name = ${capnpString(STORAGE_SERVICE)}, disk = (path = ${capnpString(objects.storageDir)}, writable = true))`] : [],
    workerFields: `durableObjectNamespaces = [${namespaces.join(", ")}],\n  durableObjectStorage = ${storage},`,
  };
}
