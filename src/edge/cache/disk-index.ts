import { openDatabase, type Db, type Migration } from "../../core/db/sqlite.js";

/**
 * The cache's index on this node: one SQLite file in the cache directory (each node caches for itself, as every
 * point of presence does, so it is never in the shared database). Kept on disk, not in a JS map: 100,000 objects
 * cost SQLite's page cache, not the heap. A row exists only for a body file that was complete when it was renamed
 * into place (body.ts); a row whose file is missing or of another size is dropped when it is opened.
 */
const INDEX_MIGRATIONS: readonly Migration[] = [
  `CREATE TABLE objects (
     key TEXT PRIMARY KEY,
     zone_id TEXT NOT NULL,
     url TEXT NOT NULL,
     file TEXT NOT NULL,
     size INTEGER NOT NULL,
     status INTEGER NOT NULL,
     headers TEXT NOT NULL,
     stored_at INTEGER NOT NULL,
     initial_age INTEGER NOT NULL,
     fresh_until INTEGER NOT NULL,
     stale_while_revalidate INTEGER NOT NULL,
     stale_if_error INTEGER NOT NULL,
     last_access INTEGER NOT NULL
   );
   CREATE INDEX objects_url ON objects (zone_id, url);
   CREATE INDEX objects_lru ON objects (last_access);
   CREATE TABLE tags (zone_id TEXT NOT NULL, tag TEXT NOT NULL, key TEXT NOT NULL, PRIMARY KEY (zone_id, tag, key)) WITHOUT ROWID;
   CREATE INDEX tags_key ON tags (key);`,
];

/** One stored answer. `headers` are the origin's as the client gets them (name/value pairs). */
export interface CachedObject {
  key: string;
  zoneId: string;
  /** `scheme://host/path?query` as the key has it (without the encoding variant), what purges match. */
  url: string;
  file: string;
  size: number;
  status: number;
  headers: [string, string][];
  storedAt: number;
  /** The origin's Age when it answered (seconds). */
  initialAge: number;
  freshUntil: number;
  staleWhileRevalidate: number;
  staleIfError: number;
}

interface Row {
  key: string;
  zone_id: string;
  url: string;
  file: string;
  size: number;
  status: number;
  headers: string;
  stored_at: number;
  initial_age: number;
  fresh_until: number;
  stale_while_revalidate: number;
  stale_if_error: number;
}

const fromRow = (r: Row): CachedObject => ({
  key: r.key,
  zoneId: r.zone_id,
  url: r.url,
  file: r.file,
  size: r.size,
  status: r.status,
  headers: JSON.parse(r.headers) as [string, string][],
  storedAt: r.stored_at,
  initialAge: r.initial_age,
  freshUntil: r.fresh_until,
  staleWhileRevalidate: r.stale_while_revalidate,
  staleIfError: r.stale_if_error,
});

/** What a purge names, within one zone. */
export type PurgeSelector =
  | { kind: "everything" }
  | { kind: "urls"; urls: string[] }
  | { kind: "prefixes"; prefixes: string[] }
  | { kind: "hosts"; hosts: string[] }
  | { kind: "tags"; tags: string[] };

/** Rows removed: their keys (for the in-memory copies) and files (deleted by the caller). */
export interface Removed {
  keys: string[];
  files: string[];
  bytes: number;
}

export class DiskIndex {
  private readonly db: Db;
  private readonly stmts;
  /** Accesses not yet written (a hit never waits on a write): flushed by `flushAccesses`. */
  private readonly accessed = new Map<string, number>();

  constructor(file: string) {
    this.db = openDatabase(file, INDEX_MIGRATIONS);
    // A bounded page cache: the index stays on disk, whatever the number of objects.
    this.db.pragma("cache_size = -8000");
    this.stmts = {
      get: this.db.prepare<[string], Row>("SELECT * FROM objects WHERE key = ?"),
      put: this.db.prepare(
        `INSERT OR REPLACE INTO objects (key, zone_id, url, file, size, status, headers, stored_at, initial_age, fresh_until, stale_while_revalidate, stale_if_error, last_access)
         VALUES (@key, @zoneId, @url, @file, @size, @status, @headers, @storedAt, @initialAge, @freshUntil, @staleWhileRevalidate, @staleIfError, @storedAt)`,
      ),
      fileOf: this.db.prepare<[string], { file: string; size: number }>("SELECT file, size FROM objects WHERE key = ?"),
      deleteKey: this.db.prepare<[string]>("DELETE FROM objects WHERE key = ?"),
      deleteTags: this.db.prepare<[string]>("DELETE FROM tags WHERE key = ?"),
      addTag: this.db.prepare<[string, string, string]>("INSERT OR IGNORE INTO tags (zone_id, tag, key) VALUES (?, ?, ?)"),
      refresh: this.db.prepare<[number, number, number, string, string]>(
        "UPDATE objects SET stored_at = ?, fresh_until = ?, initial_age = ?, headers = ? WHERE key = ?",
      ),
      touch: this.db.prepare<[number, string]>("UPDATE objects SET last_access = ? WHERE key = ?"),
      totalBytes: this.db.prepare<[], { n: number | null }>("SELECT SUM(size) AS n FROM objects"),
      count: this.db.prepare<[], { n: number }>("SELECT COUNT(*) AS n FROM objects"),
      oldest: this.db.prepare<[number], { key: string; file: string; size: number }>("SELECT key, file, size FROM objects ORDER BY last_access LIMIT ?"),
      byUrl: this.db.prepare<[string, string], { key: string; file: string; size: number }>(
        "SELECT key, file, size FROM objects WHERE zone_id = ? AND url = ?",
      ),
      byPrefix: this.db.prepare<[string, string, string], { key: string; file: string; size: number }>(
        "SELECT key, file, size FROM objects WHERE zone_id = ? AND url >= ? AND url < ?",
      ),
      byTag: this.db.prepare<[string, string], { key: string; file: string; size: number }>(
        "SELECT o.key, o.file, o.size FROM tags t JOIN objects o ON o.key = t.key WHERE t.zone_id = ? AND t.tag = ?",
      ),
      byZone: this.db.prepare<[string], { key: string; file: string; size: number }>("SELECT key, file, size FROM objects WHERE zone_id = ?"),
      all: this.db.prepare<[], { key: string; file: string; size: number }>("SELECT key, file, size FROM objects"),
    };
  }

  /** Runs `fn` in one transaction (many puts at once: tests and benchmarks fill the index this way). */
  transaction<T>(fn: () => T): T {
    return this.db.transaction(fn)();
  }

  get(key: string): CachedObject | undefined {
    const row = this.stmts.get.get(key);
    return row && fromRow(row);
  }

  /**
   * Stores (or replaces) an object and its tags; answers the file it replaced, if any (the caller deletes it once
   * nobody reads it).
   */
  put(o: CachedObject, tags: readonly string[]): { file: string; size: number } | undefined {
    return this.db.transaction(() => {
      const previous = this.stmts.fileOf.get(o.key);
      this.stmts.deleteTags.run(o.key);
      this.stmts.put.run({ ...o, headers: JSON.stringify(o.headers) });
      for (const tag of tags) this.stmts.addTag.run(o.zoneId, tag, o.key);
      return previous;
    })();
  }

  /** A revalidation (304) made the object fresh again, with the origin's updated headers. */
  refresh(key: string, storedAt: number, freshUntil: number, initialAge: number, headers: [string, string][]): void {
    this.stmts.refresh.run(storedAt, freshUntil, initialAge, JSON.stringify(headers), key);
  }

  touch(key: string, at: number): void {
    this.accessed.set(key, at);
  }

  /** Writes the recent accesses in one transaction (the LRU order survives a restart to within this interval). */
  flushAccesses(): void {
    if (this.accessed.size === 0) return;
    const batch = [...this.accessed];
    this.accessed.clear();
    this.db.transaction(() => {
      for (const [key, at] of batch) this.stmts.touch.run(at, key);
    })();
  }

  remove(key: string): Removed {
    const row = this.stmts.fileOf.get(key);
    if (!row) return { keys: [], files: [], bytes: 0 };
    this.removeRows([{ key, ...row }]);
    return { keys: [key], files: [row.file], bytes: row.size };
  }

  totalBytes(): number {
    return this.stmts.totalBytes.get()?.n ?? 0;
  }

  count(): number {
    return this.stmts.count.get()!.n;
  }

  /** The least recently used objects, removed until `bytes` are freed. */
  evict(bytes: number): Removed {
    this.flushAccesses();
    const removed: Removed = { keys: [], files: [], bytes: 0 };
    while (removed.bytes < bytes) {
      const rows = this.stmts.oldest.all(256);
      if (rows.length === 0) break;
      const take: typeof rows = [];
      for (const r of rows) {
        if (removed.bytes >= bytes) break;
        take.push(r);
        removed.bytes += r.size;
      }
      this.removeRows(take);
      for (const r of take) {
        removed.keys.push(r.key);
        removed.files.push(r.file);
      }
    }
    return removed;
  }

  /** Removes what a purge names in a zone, in one transaction. */
  purge(zoneId: string, selector: PurgeSelector): Removed {
    return this.db.transaction(() => {
      let rows: { key: string; file: string; size: number }[] = [];
      if (selector.kind === "everything") rows = this.stmts.byZone.all(zoneId);
      else if (selector.kind === "urls") rows = selector.urls.flatMap((u) => this.stmts.byUrl.all(zoneId, u));
      else if (selector.kind === "tags") rows = selector.tags.flatMap((t) => this.stmts.byTag.all(zoneId, t));
      else {
        const prefixes =
          selector.kind === "prefixes"
            ? selector.prefixes.flatMap((p) => [`http://${p}`, `https://${p}`])
            : selector.hosts.flatMap((h) => [`http://${h}/`, `https://${h}/`]);
        for (const p of prefixes) rows.push(...this.stmts.byPrefix.all(zoneId, p, p + "\u{10ffff}"));
      }
      const unique = new Map(rows.map((r) => [r.key, r]));
      this.removeRows([...unique.values()]);
      const removed: Removed = { keys: [], files: [], bytes: 0 };
      for (const r of unique.values()) {
        removed.keys.push(r.key);
        removed.files.push(r.file);
        removed.bytes += r.size;
      }
      return removed;
    })();
  }

  /** Everything (a node that may have missed purges drops what it holds). */
  clear(): Removed {
    const rows = this.stmts.all.all();
    this.db.exec("DELETE FROM tags; DELETE FROM objects;");
    return { keys: rows.map((r) => r.key), files: rows.map((r) => r.file), bytes: rows.reduce((n, r) => n + r.size, 0) };
  }

  close(): void {
    this.flushAccesses();
    this.db.close();
  }

  private removeRows(rows: readonly { key: string }[]): void {
    this.db.transaction(() => {
      for (const r of rows) {
        this.stmts.deleteTags.run(r.key);
        this.stmts.deleteKey.run(r.key);
        this.accessed.delete(r.key);
      }
    })();
  }
}
