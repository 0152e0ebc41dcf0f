import { randomBytes } from "node:crypto";
import type { Statement } from "better-sqlite3";
import type { ContentStore } from "../core/content/store.js";
import type { Db } from "../core/db/sqlite.js";
import { KvErrors } from "./errors.js";
import { KV_LIMITS } from "./limits.js";
import { listRange, listResult, type ListRow } from "./listing.js";
import { EntryWriter, type CommitRow } from "./sqlite-entry-writer.js";
import type { KvBulkEntry, KvEntry, KvListOptions, KvListResult, KvNamespace, KvPutOptions, KvStore, NamespaceListOptions, NamespacePage } from "./store.js";
import { checkKey, checkKeysToDelete, checkTitle, forItem, prepareEntries, prepareEntry, type PreparedEntry } from "./validation.js";

const nowSeconds = () => Math.floor(Date.now() / 1000);
const namespace = (row: { id: string; title: string }): KvNamespace => ({ id: row.id, title: row.title, supports_url_encoding: true });

/** Expired rows are purged this many at a time, each batch its own short write. */
const PURGE_BATCH = 1000;

interface EntryRow {
  expiration: number | null;
  metadata: string | null;
  content_id: string | null;
  value: Buffer | null;
}

/**
 * KvStore on one SQLite file (tables in sqlite-migrations.ts): the server's, or the state directory's for `--local`.
 * Keys are BLOBs of UTF-8 bytes, so listing order and prefix ranges are plain byte comparisons. Values over
 * KV_LIMITS.inlineValueBytes live in the content store, written before the row that names them is committed.
 */
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
      purge: db.prepare<[number, number], { content_id: string | null }>(
        `DELETE FROM entries WHERE (ns_id, key) IN
           (SELECT ns_id, key FROM entries WHERE expiration IS NOT NULL AND expiration <= ? LIMIT ?) RETURNING content_id`,
      ),
      contentLive: db.prepare<[string], { x: number }>("SELECT 1 AS x FROM entries WHERE content_id = ? LIMIT 1"),
    };
    this.writer = new EntryWriter(db);
  }

  /**
   * Runs `fn` (a write) once the writes before it are done. Every write of this store goes through here, and so do
   * the bulk writer thread's transactions (bulk/sqlite-writer.ts), so a write waits for that thread's transaction by
   * awaiting here instead of blocking the event loop in SQLite's busy handler.
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
        if ((e as { code?: string }).code === "SQLITE_CONSTRAINT_UNIQUE") throw KvErrors.titleExists(title);
        throw e;
      }
    });
    return namespace({ id, title });
  }

  /**
   * Records a namespace under an id chosen elsewhere (the --local CLI writing to an id it was given), unless it
   * exists already. Not part of KvStore: the API always makes ids itself.
   */
  async adoptNamespace(accountId: string, namespaceId: string): Promise<void> {
    if (this.s.nsExists.get(namespaceId)) return;
    if (!namespaceId || namespaceId.length > KV_LIMITS.namespaceIdChars) throw KvErrors.namespaceIdInvalid();
    await this.exclusive(() =>
      this.db
        .prepare("INSERT INTO namespaces (id, account_id, title, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING")
        .run(namespaceId, accountId, `local-${namespaceId}`, Date.now()),
    );
  }

  async getNamespace(accountId: string, namespaceId: string): Promise<KvNamespace | undefined> {
    const row = this.s.nsGet.get(accountId, namespaceId);
    return row && namespace(row);
  }

  async listNamespaces(accountId: string, opts: NamespaceListOptions = {}): Promise<NamespacePage> {
    // Column and direction come from fixed choices, never from raw input.
    const col = opts.order === "title" ? "title" : "id";
    const dir = opts.direction === "desc" ? "DESC" : "ASC";
    const rows = this.db
      .prepare<[string, number, number], { id: string; title: string }>(
        `SELECT id, title FROM namespaces WHERE account_id = ? ORDER BY ${col} ${dir}, id ${dir} LIMIT ? OFFSET ?`,
      )
      .all(accountId, opts.limit ?? -1, opts.offset ?? 0);
    return { namespaces: rows.map(namespace), total: this.s.nsCount.get(accountId)!.n };
  }

  async renameNamespace(accountId: string, namespaceId: string, title: string): Promise<KvNamespace> {
    checkTitle(title);
    await this.exclusive(() => {
      if (!this.s.nsGet.get(accountId, namespaceId)) throw KvErrors.namespaceNotFound();
      const other = this.s.nsByTitle.get(accountId, title);
      if (other && other.id !== namespaceId) throw KvErrors.titleExists(title);
      this.s.nsRename.run(title, accountId, namespaceId);
    });
    return namespace({ id: namespaceId, title });
  }

  async deleteNamespace(accountId: string, namespaceId: string): Promise<void> {
    const contentIds = await this.exclusive(() =>
      this.db
        .transaction(() => {
          if (!this.s.nsGet.get(accountId, namespaceId)) throw KvErrors.namespaceNotFound();
          const ids = this.s.nsContent.all(namespaceId).map((r) => r.content_id);
          this.s.nsDelete.run(accountId, namespaceId);
          return ids;
        })
        .immediate(),
    );
    await this.dropContent(contentIds);
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
      const entry = { metadata: row.metadata === null ? null : JSON.parse(row.metadata), expiration: row.expiration };
      if (row.content_id === null) return { value: row.value ?? Buffer.alloc(0), ...entry };
      try {
        return { value: await this.content.readAll(row.content_id), ...entry };
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "ENOENT" || attempt >= 2) throw e;
      }
    }
  }

  async getMany(namespaceId: string, keys: readonly string[]): Promise<Map<string, KvEntry | null>> {
    keys.forEach((k, i) => forItem(`keys[${i}]`, () => checkKey(k)));
    const out = new Map<string, KvEntry | null>();
    for (const k of keys) if (!out.has(k)) out.set(k, await this.readEntry(namespaceId, Buffer.from(k, "utf8")));
    return out;
  }

  async put(namespaceId: string, key: string, value: Buffer, opts: KvPutOptions = {}): Promise<void> {
    await this.write(namespaceId, [prepareEntry(key, value, opts)]);
  }

  async putMany(namespaceId: string, entries: readonly KvBulkEntry[]): Promise<void> {
    const prepared = prepareEntries(entries);
    await this.write(namespaceId, prepared);
  }

  /** Big values go to the content store first, then one transaction commits every row. */
  private async write(namespaceId: string, entries: readonly PreparedEntry[]): Promise<void> {
    if (!this.s.nsExists.get(namespaceId)) throw KvErrors.namespaceNotFound();
    const contentIds = new Map<PreparedEntry, string>();
    try {
      for (const e of entries) {
        if (e.value.length > KV_LIMITS.inlineValueBytes) contentIds.set(e, (await this.content.put(e.value)).id);
      }
    } catch (err) {
      await this.dropContent([...contentIds.values()]);
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
      await this.dropContent([...contentIds.values()]);
      throw err;
    }
    await this.dropContent(replaced);
  }

  async delete(namespaceId: string, key: string): Promise<void> {
    checkKey(key);
    const row = await this.exclusive(() => this.s.del.get(namespaceId, Buffer.from(key, "utf8")));
    if (row?.content_id) await this.dropContent([row.content_id]);
  }

  async deleteMany(namespaceId: string, keys: readonly string[]): Promise<void> {
    const bufs = checkKeysToDelete(keys);
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
    await this.dropContent(dropped);
  }

  async list(namespaceId: string, opts: KvListOptions = {}): Promise<KvListResult> {
    const range = listRange(opts);
    const where = ["ns_id = ?", "(expiration IS NULL OR expiration > ?)"];
    const params: unknown[] = [namespaceId, nowSeconds()];
    if (range.after) {
      where.push("key > ?");
      params.push(range.after);
    } else if (range.from) {
      where.push("key >= ?");
      params.push(range.from);
    }
    if (range.before) {
      where.push("key < ?");
      params.push(range.before);
    }
    // One extra row tells whether another page exists.
    params.push(range.limit + 1);
    return listResult(this.listStatement(where.join(" AND ")).all(...params), range.limit);
  }

  /** Listing has four query shapes (with or without a lower and an upper bound); each is prepared once. */
  private readonly listStatements = new Map<string, Statement<unknown[], ListRow>>();
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
      const rows = await this.exclusive(() => this.s.purge.all(now, PURGE_BATCH));
      await this.dropContent(rows.flatMap((r) => (r.content_id ? [r.content_id] : [])));
      total += rows.length;
      if (rows.length < PURGE_BATCH) return total;
    }
  }

  gcContent(graceMs?: number): Promise<number> {
    return this.content.gc((id) => this.s.contentLive.get(id) !== undefined, graceMs);
  }

  /** Content is deleted only after the rows naming it are gone; what cannot be deleted now is left for gcContent. */
  async dropContent(ids: readonly string[]): Promise<void> {
    for (const id of ids) await this.content.delete(id).catch(() => undefined);
  }
}
