/**
 * The Durable Object namespaces of each Worker and the migration tag it is at. A namespace is created by a
 * `new_classes` / `new_sqlite_classes` migration, renamed by `renamed_classes` (keeping its storage) and removed
 * by `deleted_classes`; its `uniqueKey` is what workerd derives object ids from and names the storage directory
 * after, so it never changes while the namespace exists. Every backend keeps these promises (store.contract.ts):
 *
 * - `replace` swaps a script's whole set of namespaces and its tag at once; namespaces it no longer names are
 *   removed, those it keeps keep their id, key and `createdOn`.
 * - An account sees only its own namespaces (`list`, `get` by id).
 * - `deleteScript` removes a script's namespaces and tag and returns the namespaces removed.
 */
export interface NamespaceRecord {
  /** The namespace id the v4 API shows (32 hex digits). */
  id: string;
  accountId: string;
  script: string;
  className: string;
  /** Created by `new_sqlite_classes`: the SQL storage API is on. */
  useSqlite: boolean;
  /** workerd's `uniqueKey`: object ids are derived from it, and it names the storage directory. Never shown by the API. */
  uniqueKey: string;
  createdOn: string;
}

/** What a script has: its migration tag (the last one applied) and its namespaces. */
export interface ScriptDurableObjects {
  migrationTag?: string;
  namespaces: NamespaceRecord[];
}

export interface DurableObjectsStore {
  ofScript(accountId: string, script: string): Promise<ScriptDurableObjects>;
  /** An account's namespaces, by script then class. */
  list(accountId: string): Promise<NamespaceRecord[]>;
  get(accountId: string, id: string): Promise<NamespaceRecord | undefined>;
  /** Makes `state` the script's namespaces and tag (an empty state with no tag removes everything). */
  replace(accountId: string, script: string, state: ScriptDurableObjects): Promise<void>;
  deleteScript(accountId: string, script: string): Promise<NamespaceRecord[]>;
}
