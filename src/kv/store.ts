import { randomBytes } from "node:crypto";
import type { ContentStore } from "../core/content/store.js";
import type { Statement } from "better-sqlite3";
import type { Db, Migration } from "../core/db/sqlite.js";
import { EdgeError } from "../core/errors.js";
import { checkKey, checkTitle, keyError, KV_LIMITS, KvCodes, resolveExpiration, serializeMetadata, valueError } from "./limits.js";

export interface KvNamespace {
  id: string;
  title: string;
  supports_url_encoding: boolean;
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

export interface NamespacePage {
  namespaces: KvNamespace[];
  total: number;
}

export interface NamespaceListOptions {
  order?: "id" | "title";
  direction?: "asc" | "desc";
  offset?: number;
  limit?: number;
}

/**
 * The one KV store behind the v4 API, the `--local` CLI and worker bindings. Validation lives here so every
 * door enforces the same limits; failures are ApiErrors (status + KV code) and nothing is written on error.
 * Namespace ids are globally unique, so entry operations take the namespace id alone; callers check that
 * the namespace belongs to the account first (getNamespace).
 */
export interface KvStore {
  createNamespace(accountId: string, title: string): Promise<KvNamespace>;
  getNamespace(accountId: string, namespaceId: string): KvNamespace | undefined;
  listNamespaces(accountId: string, opts?: NamespaceListOptions): NamespacePage;
  renameNamespace(accountId: string, namespaceId: string, title: string): Promise<KvNamespace>;
  deleteNamespace(accountId: string, namespaceId: string): Promise<void>;

  get(namespaceId: string, key: string): Promise<KvEntry | null>;
  /** Bulk get: every key once, in order; missing or expired keys map to null. */
  getMany(namespaceId: string, keys: readonly string[]): Promise<Map<string, KvEntry | null>>;
  put(namespaceId: string, key: string, value: Buffer, opts?: KvPutOptions): Promise<void>;
  /** All or nothing: every entry is validated before anything is written; errors name the entry index. */
  putMany(namespaceId: string, entries: readonly KvBulkEntry[]): Promise<void>;
  /** Deleting a missing key is not an error. */
  delete(namespaceId: string, key: string): Promise<void>;
  /** All or nothing: every key is validated first. */
  deleteMany(namespaceId: string, keys: readonly string[]): Promise<void>;
  list(namespaceId: string, opts?: KvListOptions): KvListResult;

  /** Removes expired entries (they are already invisible); returns how many went. */
  purgeExpired(nowSeconds?: number): Promise<number>;
  /** Removes content files no entry names (left behind by a crash between file write and commit). */
  gcContent(graceMs?: number): Promise<number>;
}

/** Append-only: the server and the --local CLI open the same file with these. */
export const KV_MIGRATIONS: readonly Migration[] = [
  `CREATE TABLE namespaces (
     id TEXT PRIMARY KEY,
     account_id TEXT NOT NULL,
     title TEXT NOT NULL,
     created_at INTEGER NOT NULL,
     UNIQUE (account_id, title)
   );
   -- key is a BLOB of UTF-8 bytes so ordering and prefix ranges are plain byte comparisons.
   -- value comes last so listing (key, expiration, metadata) never reads a value's overflow pages.
   CREATE TABLE entries (
     ns_id TEXT NOT NULL REFERENCES namespaces(id) ON DELETE CASCADE,
     key BLOB NOT NULL,
     expiration INTEGER,
     metadata TEXT,
     size INTEGER NOT NULL,
     content_id TEXT,
     value BLOB,
     PRIMARY KEY (ns_id, key)
   ) WITHOUT ROWID;
   CREATE INDEX entries_expiration ON entries (expiration) WHERE expiration IS NOT NULL;
   CREATE INDEX entries_content ON entries (content_id) WHERE content_id IS NOT NULL;`,
  // Bulk writes stage their values here in short transactions while the body streams in (bulk-staging.ts); one last
  // transaction points the entries at them (blob_id), so a bulk write is seen whole or not at all without its bytes
  // being copied while the write lock is held. A blob lives exactly as long as the entry naming it: the triggers
  // delete it when the entry lets go of it (overwrite, delete, expiry purge, namespace delete).
  // bulk_writes lists bulk writes under way; their blobs are not yet named by any entry. AUTOINCREMENT: an id is never
  // reused, so a bulk write's id names only its own blobs.
  `CREATE TABLE bulk_writes (id INTEGER PRIMARY KEY AUTOINCREMENT, started_at INTEGER NOT NULL);
   CREATE TABLE blobs (id INTEGER PRIMARY KEY, bulk_id INTEGER NOT NULL, value BLOB NOT NULL);
   CREATE INDEX blobs_bulk ON blobs (bulk_id);
   ALTER TABLE entries ADD COLUMN blob_id INTEGER;
   CREATE INDEX entries_blob ON entries (blob_id) WHERE blob_id IS NOT NULL;
   CREATE TRIGGER entries_blob_replaced AFTER UPDATE OF blob_id ON entries
     WHEN old.blob_id IS NOT NULL AND old.blob_id IS NOT new.blob_id
     BEGIN DELETE FROM blobs WHERE id = old.blob_id; END;
   CREATE TRIGGER entries_blob_deleted AFTER DELETE ON entries
     WHEN old.blob_id IS NOT NULL
     BEGIN DELETE FROM blobs WHERE id = old.blob_id; END;`,
];

const nowSeconds = () => Math.floor(Date.now() / 1000);

interface EntryRow {
  expiration: number | null;
  metadata: string | null;
  content_id: string | null;
  value: Buffer | null;
}

function encodeCursor(lastKey: Buffer): string {
  return lastKey.toString("base64url");
}

function decodeCursor(cursor: string): Buffer {
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) throw new EdgeError(400, KvCodes.invalidCursor, "cursor is not one this server issued");
  return Buffer.from(cursor, "base64url");
}

/** The smallest byte string greater than every string starting with `prefix` (UTF-8 never holds 0xff). */
function prefixEnd(prefix: Buffer): Buffer | undefined {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i]! < 0xff) {
      end[i]! += 1;
      return end.subarray(0, i + 1);
    }
  }
  return undefined;
}

function parseMetadata(json: string | null): unknown {
  return json === null ? null : JSON.parse(json);
}

/** Validates one entry and returns what will be stored; throws an EdgeError (prefixed with `where`). */
export function prepareEntry(key: string, value: Buffer, opts: KvPutOptions, where = "") {
  const fail = (e: EdgeError): never => {
    throw where ? new EdgeError(e.status, e.errors[0]!.code, `${where}${e.message}`) : e;
  };
  const ke = keyError(key);
  if (ke) fail(ke);
  if (!Buffer.isBuffer(value)) fail(new EdgeError(400, KvCodes.badRequest, "value must be bytes"));
  const ve = valueError(value.length);
  if (ve) fail(ve);
  const meta = serializeMetadata(opts.metadata);
  if (meta.error) fail(meta.error);
  const exp = resolveExpiration(opts);
  if (exp.error) fail(exp.error);
  return { key: Buffer.from(key, "utf8"), value, metadata: meta.json ?? null, expiration: exp.expiration ?? null };
}

type Prepared = ReturnType<typeof prepareEntry>;

/** One entry as it is committed: its value inline (`value`), in the content store (`contentId`) or a staged blob (`blobId`). */
export interface CommitRow {
  key: Buffer;
  expiration: number | null;
  metadata: string | null;
  size: number;
  value: Buffer | null;
  contentId: string | null;
  blobId: number | null;
}

/** The statements that commit entries, prepared on one connection (the store's, or the bulk writer thread's). */
export class EntryWriter {
  private readonly nsExists;
  private readonly oldContent;
  private readonly upsert;

  constructor(db: Db) {
    this.nsExists = db.prepare<[string], { id: string }>("SELECT id FROM namespaces WHERE id = ?");
    this.oldContent = db.prepare<[string, Buffer], { content_id: string | null }>("SELECT content_id FROM entries WHERE ns_id = ? AND key = ?");
    this.upsert = db.prepare(
      `INSERT INTO entries (ns_id, key, expiration, metadata, size, content_id, value, blob_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (ns_id, key) DO UPDATE SET expiration = excluded.expiration, metadata = excluded.metadata,
         size = excluded.size, content_id = excluded.content_id, value = excluded.value, blob_id = excluded.blob_id`,
    );
  }

  /**
   * Inside a write transaction: writes `rows` into `namespaceId` (404 once the namespace is gone) and returns the
   * content ids they replaced, to delete after the commit. A replaced blob goes with the row (see the triggers).
   */
  upsertAll(namespaceId: string, rows: readonly CommitRow[]): string[] {
    if (!this.nsExists.get(namespaceId)) throw namespaceNotFound();
    const replaced: string[] = [];
    for (const r of rows) {
      const prev = this.oldContent.get(namespaceId, r.key);
      if (prev?.content_id) replaced.push(prev.content_id);
      this.upsert.run(namespaceId, r.key, r.expiration, r.metadata, r.size, r.contentId, r.value, r.blobId);
    }
    return replaced;
  }
}

export class SqliteKvStore implements KvStore {
  private readonly s;
  private readonly writer: EntryWriter;
  private writeQueue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly db: Db,
    private readonly content: ContentStore,
  ) {
    this.s = {
      nsInsert: db.prepare("INSERT INTO namespaces (id, account_id, title, created_at) VALUES (?, ?, ?, ?)"),
      nsGet: db.prepare<[string, string], { id: string; title: string }>("SELECT id, title FROM namespaces WHERE account_id = ? AND id = ?"),
      nsExists: db.prepare<[string], { id: string }>("SELECT id FROM namespaces WHERE id = ?"),
      nsByTitle: db.prepare<[string, string], { id: string }>("SELECT id FROM namespaces WHERE account_id = ? AND title = ?"),
      nsCount: db.prepare<[string], { n: number }>("SELECT count(*) AS n FROM namespaces WHERE account_id = ?"),
      nsRename: db.prepare("UPDATE namespaces SET title = ? WHERE account_id = ? AND id = ?"),
      nsDelete: db.prepare("DELETE FROM namespaces WHERE account_id = ? AND id = ?"),
      nsContent: db.prepare<[string], { content_id: string }>("SELECT content_id FROM entries WHERE ns_id = ? AND content_id IS NOT NULL"),
      get: db.prepare<[string, Buffer, number], EntryRow>(
        `SELECT e.expiration, e.metadata, e.content_id, coalesce(e.value, b.value) AS value
         FROM entries e LEFT JOIN blobs b ON b.id = e.blob_id
         WHERE e.ns_id = ? AND e.key = ? AND (e.expiration IS NULL OR e.expiration > ?)`,
      ),
      del: db.prepare<[string, Buffer], { content_id: string | null }>("DELETE FROM entries WHERE ns_id = ? AND key = ? RETURNING content_id"),
      purge: db.prepare<[number], { content_id: string | null }>(
        `DELETE FROM entries WHERE (ns_id, key) IN
           (SELECT ns_id, key FROM entries WHERE expiration IS NOT NULL AND expiration <= ? LIMIT 1000) RETURNING content_id`,
      ),
      contentLive: db.prepare<[string], { x: number }>("SELECT 1 AS x FROM entries WHERE content_id = ? LIMIT 1"),
    };
    this.writer = new EntryWriter(db);
  }

  /**
   * Runs `fn` (a write) once the writes before it are done. Every write of this store goes through here, and so do
   * the bulk writer thread's transactions (bulk-writer.ts), so a write waits for that thread's transaction by awaiting
   * here instead of blocking the event loop in SQLite's busy handler.
   */
  exclusive<T>(fn: () => T | Promise<T>): Promise<T> {
    const run = this.writeQueue.then(fn);
    this.writeQueue = run.catch(() => undefined);
    return run;
  }

  // ---- namespaces ----

  async createNamespace(accountId: string, title: string): Promise<KvNamespace> {
    checkTitle(title);
    const id = randomBytes(16).toString("hex");
    await this.exclusive(() => {
      try {
        this.s.nsInsert.run(id, accountId, title, Date.now());
      } catch (e) {
        if ((e as { code?: string }).code === "SQLITE_CONSTRAINT_UNIQUE") throw titleExists(title);
        throw e;
      }
    });
    return { id, title, supports_url_encoding: true };
  }

  /**
   * Records a namespace under an id chosen elsewhere (the --local CLI writing to an id it was given),
   * unless it exists already. Not part of KvStore: the API always creates ids itself.
   */
  adoptNamespace(accountId: string, namespaceId: string): void {
    if (this.s.nsExists.get(namespaceId)) return;
    if (!namespaceId || namespaceId.length > 64) throw new EdgeError(400, KvCodes.badRequest, "namespace id must be 1-64 characters");
    this.db
      .prepare("INSERT INTO namespaces (id, account_id, title, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING")
      .run(namespaceId, accountId, `local-${namespaceId}`, Date.now());
  }

  getNamespace(accountId: string, namespaceId: string): KvNamespace | undefined {
    const row = this.s.nsGet.get(accountId, namespaceId);
    return row && { id: row.id, title: row.title, supports_url_encoding: true };
  }

  listNamespaces(accountId: string, opts: NamespaceListOptions = {}): NamespacePage {
    // Column and direction come from fixed choices, never from raw input.
    const col = opts.order === "title" ? "title" : "id";
    const dir = opts.direction === "desc" ? "DESC" : "ASC";
    const rows = this.db
      .prepare<[string, number, number], { id: string; title: string }>(
        `SELECT id, title FROM namespaces WHERE account_id = ? ORDER BY ${col} ${dir}, id ${dir} LIMIT ? OFFSET ?`,
      )
      .all(accountId, opts.limit ?? -1, opts.offset ?? 0);
    return {
      namespaces: rows.map((r) => ({ id: r.id, title: r.title, supports_url_encoding: true })),
      total: this.s.nsCount.get(accountId)!.n,
    };
  }

  async renameNamespace(accountId: string, namespaceId: string, title: string): Promise<KvNamespace> {
    checkTitle(title);
    await this.exclusive(() => {
      if (!this.getNamespace(accountId, namespaceId)) throw namespaceNotFound();
      const other = this.s.nsByTitle.get(accountId, title);
      if (other && other.id !== namespaceId) throw titleExists(title);
      this.s.nsRename.run(title, accountId, namespaceId);
    });
    return { id: namespaceId, title, supports_url_encoding: true };
  }

  async deleteNamespace(accountId: string, namespaceId: string): Promise<void> {
    const contentIds = await this.exclusive(() =>
      this.db
        .transaction(() => {
          if (!this.getNamespace(accountId, namespaceId)) throw namespaceNotFound();
          const ids = this.s.nsContent.all(namespaceId).map((r) => r.content_id);
          this.s.nsDelete.run(accountId, namespaceId);
          return ids;
        })
        .immediate(),
    );
    this.dropContent(contentIds);
  }

  // ---- entries ----

  async get(namespaceId: string, key: string): Promise<KvEntry | null> {
    checkKey(key);
    return this.readEntry(namespaceId, Buffer.from(key, "utf8"));
  }

  private async readEntry(namespaceId: string, key: Buffer): Promise<KvEntry | null> {
    // A concurrent overwrite may delete the content file between reading the row and the file: read again.
    for (let attempt = 0; ; attempt++) {
      const row = this.s.get.get(namespaceId, key, nowSeconds());
      if (!row) return null;
      const entry = { metadata: parseMetadata(row.metadata), expiration: row.expiration };
      if (row.content_id === null) return { value: row.value ?? Buffer.alloc(0), ...entry };
      try {
        return { value: await this.content.readAll(row.content_id), ...entry };
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "ENOENT" || attempt >= 2) throw e;
      }
    }
  }

  async getMany(namespaceId: string, keys: readonly string[]): Promise<Map<string, KvEntry | null>> {
    keys.forEach((k, i) => {
      const e = keyError(k);
      if (e) throw new EdgeError(e.status, e.errors[0]!.code, `keys[${i}]: ${e.message}`);
    });
    const out = new Map<string, KvEntry | null>();
    for (const k of keys) if (!out.has(k)) out.set(k, await this.readEntry(namespaceId, Buffer.from(k, "utf8")));
    return out;
  }

  async put(namespaceId: string, key: string, value: Buffer, opts: KvPutOptions = {}): Promise<void> {
    await this.write(namespaceId, [prepareEntry(key, value, opts)]);
  }

  async putMany(namespaceId: string, entries: readonly KvBulkEntry[]): Promise<void> {
    if (entries.length > KV_LIMITS.bulkWriteEntries) {
      throw new EdgeError(413, KvCodes.tooManyEntries, `a bulk write holds at most ${KV_LIMITS.bulkWriteEntries} entries, got ${entries.length}`);
    }
    const prepared = entries.map((e, i) => prepareEntry(e.key, e.value, e, `entry ${i}: `));
    await this.write(namespaceId, prepared);
  }

  /** Big values go to the content store first, then one transaction commits every row. */
  private async write(namespaceId: string, entries: Prepared[]): Promise<void> {
    if (!this.s.nsExists.get(namespaceId)) throw namespaceNotFound();
    const contentIds = new Map<Prepared, string>();
    try {
      for (const e of entries) {
        if (e.value.length > KV_LIMITS.inlineValueBytes) contentIds.set(e, (await this.content.put(e.value)).id);
      }
    } catch (err) {
      this.dropContent([...contentIds.values()]);
      throw err;
    }
    const rows = entries.map((e): CommitRow => {
      const contentId = contentIds.get(e) ?? null;
      return { key: e.key, expiration: e.expiration, metadata: e.metadata, size: e.value.length, contentId, value: contentId ? null : e.value, blobId: null };
    });
    let replaced: string[];
    try {
      replaced = await this.exclusive(() => this.db.transaction(() => this.writer.upsertAll(namespaceId, rows)).immediate());
    } catch (err) {
      this.dropContent([...contentIds.values()]);
      throw err;
    }
    this.dropContent(replaced);
  }

  async delete(namespaceId: string, key: string): Promise<void> {
    checkKey(key);
    const row = await this.exclusive(() => this.s.del.get(namespaceId, Buffer.from(key, "utf8")));
    if (row?.content_id) this.dropContent([row.content_id]);
  }

  async deleteMany(namespaceId: string, keys: readonly string[]): Promise<void> {
    const bufs = keys.map((k, i) => {
      if (typeof k !== "string") throw new EdgeError(400, KvCodes.invalidKey, `entry ${i}: key must be a string`);
      const e = keyError(k);
      if (e) throw new EdgeError(e.status, e.errors[0]!.code, `entry ${i}: ${e.message}`);
      return Buffer.from(k, "utf8");
    });
    const dropped = await this.exclusive(() =>
      this.db
        .transaction(() => {
          const ids: string[] = [];
          for (const b of bufs) {
            const row = this.s.del.get(namespaceId, b);
            if (row?.content_id) ids.push(row.content_id);
          }
          return ids;
        })
        .immediate(),
    );
    this.dropContent(dropped);
  }

  list(namespaceId: string, opts: KvListOptions = {}): KvListResult {
    const limit = opts.limit ?? KV_LIMITS.listLimit;
    if (!Number.isInteger(limit) || limit < 1 || limit > KV_LIMITS.listLimit) {
      throw new EdgeError(400, KvCodes.invalidLimit, `limit must be a whole number from 1 to ${KV_LIMITS.listLimit}, got ${String(opts.limit)}`);
    }
    const prefix = Buffer.from(opts.prefix ?? "", "utf8");
    const after = opts.cursor ? decodeCursor(opts.cursor) : undefined;
    const end = prefix.length ? prefixEnd(prefix) : undefined;
    const where = ["ns_id = ?", "(expiration IS NULL OR expiration > ?)"];
    const params: unknown[] = [namespaceId, nowSeconds()];
    if (after && Buffer.compare(after, prefix) >= 0) {
      where.push("key > ?");
      params.push(after);
    } else if (prefix.length) {
      where.push("key >= ?");
      params.push(prefix);
    }
    if (end) {
      where.push("key < ?");
      params.push(end);
    }
    // One extra row tells whether another page exists.
    params.push(limit + 1);
    const rows = this.listStatement(where.join(" AND ")).all(...params);
    const more = rows.length > limit;
    const page = more ? rows.slice(0, limit) : rows;
    const keys = page.map((r) => {
      const k: KvKeyInfo = { name: r.key.toString("utf8") };
      if (r.expiration !== null) k.expiration = r.expiration;
      if (r.metadata !== null) k.metadata = JSON.parse(r.metadata);
      return k;
    });
    return more ? { keys, list_complete: false, cursor: encodeCursor(page[page.length - 1]!.key) } : { keys, list_complete: true };
  }

  /** Listing has four query shapes (with or without a lower and an upper bound); each is prepared once. */
  private readonly listStatements = new Map<string, Statement<unknown[], { key: Buffer; expiration: number | null; metadata: string | null }>>();
  private listStatement(where: string) {
    let st = this.listStatements.get(where);
    if (!st) {
      st = this.db.prepare(`SELECT key, expiration, metadata FROM entries WHERE ${where} ORDER BY key LIMIT ?`);
      this.listStatements.set(where, st);
    }
    return st;
  }

  async purgeExpired(now = nowSeconds()): Promise<number> {
    let total = 0;
    for (;;) {
      const rows = await this.exclusive(() => this.s.purge.all(now));
      this.dropContent(rows.flatMap((r) => (r.content_id ? [r.content_id] : [])));
      total += rows.length;
      if (rows.length < 1000) return total;
    }
  }

  gcContent(graceMs?: number): Promise<number> {
    return this.content.gc((id) => this.s.contentLive.get(id) !== undefined, graceMs);
  }

  /** Content is deleted only after the rows naming it are gone; a failure here leaves an orphan for gc. */
  dropContent(ids: readonly string[]): void {
    for (const id of ids) {
      try {
        this.content.deleteSync(id);
      } catch {
        // left for gcContent
      }
    }
  }
}

export const namespaceNotFound = () => new EdgeError(404, KvCodes.namespaceNotFound, "namespace not found");
export const keyNotFound = () => new EdgeError(404, KvCodes.keyNotFound, "get: 'key not found'");
const titleExists = (title: string) => new EdgeError(400, KvCodes.titleExists, `a namespace with the title "${title}" already exists`);
