import type { Readable } from "node:stream";

export interface KvNamespace {
  id: string;
  title: string;
  supports_url_encoding: boolean;
}

export interface NamespaceListOptions {
  order?: "id" | "title";
  direction?: "asc" | "desc";
  offset?: number;
  limit?: number;
}

export interface NamespacePage {
  namespaces: KvNamespace[];
  /** Every namespace of the account, not only this page's. */
  total: number;
}

export interface KvEntry {
  value: Buffer;
  /** Parsed metadata, or null when none was stored. */
  metadata: unknown;
  /** UNIX seconds, or null when the key never expires. */
  expiration: number | null;
}

export interface KvPutOptions {
  /** Absolute UNIX seconds; at least 60 s ahead. */
  expiration?: number;
  /** Seconds from now, at least 60; wins over `expiration`. */
  expirationTtl?: number;
  /** Any JSON value, at most 1,024 bytes serialized. */
  metadata?: unknown;
}

export interface KvBulkEntry extends KvPutOptions {
  key: string;
  value: Buffer;
}

export interface KvListOptions {
  prefix?: string;
  /** 1..1000, default 1000. */
  limit?: number;
  /** The opaque cursor from the previous page. */
  cursor?: string;
}

export interface KvKeyInfo {
  name: string;
  expiration?: number;
  metadata?: unknown;
}

export interface KvListResult {
  keys: KvKeyInfo[];
  list_complete: boolean;
  /** Present when list_complete is false. */
  cursor?: string;
}

/**
 * The one KV store behind the v4 API, the `--local` CLI and worker bindings. Every implementation checks the rules of
 * validation.ts, so every door enforces the same limits; a refusal is a KvErrors one, and nothing is written then.
 * Namespace ids are globally unique, so entry operations take the namespace id alone; callers check that the
 * namespace belongs to the account first (getNamespace). Large values go to the ContentStore the store was given.
 * The behaviour every implementation shares is written down in store.contract.ts.
 */
export interface KvStore {
  createNamespace(accountId: string, title: string): Promise<KvNamespace>;
  getNamespace(accountId: string, namespaceId: string): Promise<KvNamespace | undefined>;
  listNamespaces(accountId: string, opts?: NamespaceListOptions): Promise<NamespacePage>;
  renameNamespace(accountId: string, namespaceId: string, title: string): Promise<KvNamespace>;
  /** Deletes the namespace and every entry in it. */
  deleteNamespace(accountId: string, namespaceId: string): Promise<void>;

  /** The entry, or null when the key is missing or expired. */
  get(namespaceId: string, key: string): Promise<KvEntry | null>;
  /** Bulk get: every key once, in order; missing or expired keys map to null. */
  getMany(namespaceId: string, keys: readonly string[]): Promise<Map<string, KvEntry | null>>;
  put(namespaceId: string, key: string, value: Buffer, opts?: KvPutOptions): Promise<void>;
  /** All or nothing: every entry is checked before anything is written; a refusal names the entry's index. */
  putMany(namespaceId: string, entries: readonly KvBulkEntry[]): Promise<void>;
  /** Deleting a missing key is not an error. */
  delete(namespaceId: string, key: string): Promise<void>;
  /** All or nothing: every key is checked first. */
  deleteMany(namespaceId: string, keys: readonly string[]): Promise<void>;
  /** One page of the live keys in UTF-8 byte order. */
  list(namespaceId: string, opts?: KvListOptions): Promise<KvListResult>;

  /** Removes expired entries (they are already invisible) and their content; returns how many went. */
  purgeExpired(nowSeconds?: number): Promise<number>;
  /** Removes content no entry names (left behind by a crash between the content write and the commit). */
  gcContent(graceMs?: number): Promise<number>;
}

/**
 * A bulk write streamed from its request body (a JSON array of up to 10,000 entries, up to 100 MB): read as it
 * arrives, never whole in memory, written all or nothing. Each backend brings its own (bulk/sqlite-writer.ts).
 */
export interface KvBulkWriter {
  /**
   * Writes the entries `body` carries into `namespaceId`; returns how many there were. `declaredBytes` is the
   * body's content-length, when it has one. A refusal names the first rule the body broke.
   */
  write(namespaceId: string, body: Readable | undefined, declaredBytes?: number): Promise<number>;
}
