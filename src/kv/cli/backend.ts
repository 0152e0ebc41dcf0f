import type { KvBulkEntry, KvKeyInfo, KvPutOptions } from "../store.js";

/** What the key and bulk commands need from a namespace, whether it lives behind the API or in local files. */
export interface KvCliBackend {
  /** "local" or "remote", for messages. */
  readonly where: string;
  put(key: string, value: Buffer, opts: KvPutOptions): Promise<void>;
  get(key: string): Promise<Buffer | null>;
  /** Every key (all pages) with the prefix. */
  list(prefix?: string): Promise<KvKeyInfo[]>;
  delete(key: string): Promise<void>;
  /** Entries are already validated; written in batches, reporting how many are done. */
  putMany(entries: readonly KvBulkEntry[], progress: (done: number) => void): Promise<void>;
  deleteMany(keys: readonly string[], progress: (done: number) => void): Promise<void>;
  close(): void;
}

export interface BackendArgs {
  local?: boolean;
  "persist-to"?: string;
  env?: string;
  readonly given: ReadonlySet<string>;
}
