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
  // A purge answered before its rows are deleted (`sweep`): replayed when the index is opened again, so a purge the
  // API confirmed holds even if the process ended before the rows went.
  `CREATE TABLE pending_purges (id INTEGER PRIMARY KEY, zone_id TEXT NOT NULL, selector TEXT NOT NULL);`,
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

/**
 * What a purge names, within one zone. A URL item is `scheme://host/path?query` (every encoding variant), or that and
 * `\n` and one variant's encoding class (`br`, `gzip`, or empty for identity), as purge.ts makes from `{url, headers}`.
 */
export type PurgeSelector =
  | { kind: "everything" }
  | { kind: "urls"; urls: string[] }
  | { kind: "prefixes"; prefixes: string[] }
  | { kind: "hosts"; hosts: string[] }
  | { kind: "tags"; tags: string[] };

/** A row as purges and eviction find it. */
type Located = { key: string; file: string; size: number };
/** A purge answered whose rows are still to delete. */
type Unswept = { id: number; rows: Located[] };

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
  /**
   * Rows a purge took out of service but `sweep` has not deleted yet, by key: the file each had (a row of that key
   * with another file is a later fill, and is the cache's again). Lookups skip them.
   */
  private readonly gone = new Map<string, Located>();
  /** Purges answered whose rows are still to delete, oldest first (their pending_purges row goes with the last). */
  private readonly unswept: Unswept[] = [];
  /** What the replay of purges pending at the last close removed (the caller deletes the files). */
  readonly recovered: Removed;

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
      addPending: this.db.prepare<[string, string]>("INSERT INTO pending_purges (zone_id, selector) VALUES (?, ?)"),
      pending: this.db.prepare<[], { id: number; zone_id: string; selector: string }>("SELECT id, zone_id, selector FROM pending_purges ORDER BY id"),
      deletePending: this.db.prepare<[number]>("DELETE FROM pending_purges WHERE id = ?"),
      deleteKeyFile: this.db.prepare<[string, string]>("DELETE FROM objects WHERE key = ? AND file = ?"),
    };
    this.recovered = this.replayPending();
  }

  /** Runs `fn` in one transaction (many puts at once: tests and benchmarks fill the index this way). */
  transaction<T>(fn: () => T): T {
    return this.db.transaction(fn)();
  }

  get(key: string): CachedObject | undefined {
    const row = this.stmts.get.get(key);
    return row && !this.isGone(row) ? fromRow(row) : undefined;
  }

  /**
   * Stores (or replaces) an object and its tags; answers the file it replaced, if any (the caller deletes it once
   * nobody reads it).
   */
  put(o: CachedObject, tags: readonly string[]): { file: string; size: number } | undefined {
    return this.db.transaction(() => {
      let previous = this.stmts.fileOf.get(o.key);
      if (previous && this.isGone({ key: o.key, ...previous })) {
        // Purged, its row not swept yet: its file and bytes were given back by the purge; this row replaces it.
        this.gone.delete(o.key);
        previous = undefined;
      }
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
    if (!row || this.isGone({ key, ...row })) return { keys: [], files: [], bytes: 0 };
    this.removeRows([{ key, ...row }]);
    return { keys: [key], files: [row.file], bytes: row.size };
  }

  totalBytes(): number {
    return this.stmts.totalBytes.get()?.n ?? 0;
  }

  /** Objects in service (rows purged but not swept yet are not counted). */
  count(): number {
    return this.stmts.count.get()!.n - this.gone.size;
  }

  /** The least recently used objects, removed until `bytes` are freed. */
  evict(bytes: number): Removed {
    this.flushAccesses();
    // Purged rows are not the cache's any more (their bytes were given back): gone before the oldest are picked.
    this.sweep(Infinity);
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

  /**
   * Takes what a purge names in a zone out of service at once: the rows are found by index, marked gone (lookups skip
   * them) and the purge is written down (one small row, so it holds across a restart); the rows themselves are
   * deleted later by `sweep`, in batches, after the API has answered. Deleting 100 rows spread over the tables'
   * b-trees is what cost a tag purge its time (docs/benchmarks.md).
   */
  purge(zoneId: string, selector: PurgeSelector): Removed {
    const rows = this.find(zoneId, selector).filter((r) => !this.isGone(r));
    const removed: Removed = { keys: [], files: [], bytes: 0 };
    if (rows.length === 0) return removed;
    const id = Number(this.stmts.addPending.run(zoneId, JSON.stringify(selector)).lastInsertRowid);
    for (const r of rows) {
      this.gone.set(r.key, r);
      this.accessed.delete(r.key);
      removed.keys.push(r.key);
      removed.files.push(r.file);
      removed.bytes += r.size;
    }
    this.unswept.push({ id, rows });
    return removed;
  }

  /** Whether purged rows wait for `sweep`. */
  hasUnswept(): boolean {
    return this.unswept.length > 0;
  }

  /**
   * Deletes up to `max` purged rows (at least one purge's worth when `max` is Infinity: all), in one transaction;
   * a row replaced by a later fill meanwhile stays (only the row with the purged file goes).
   */
  sweep(max: number): void {
    if (this.unswept.length === 0) return;
    // Planned first, applied to the in-memory state only once the transaction committed (a failed one leaves
    // every row marked gone, and its purge written down).
    const plan: { purge: Unswept; batch: Located[] }[] = [];
    let left = max;
    for (const purge of this.unswept) {
      if (left <= 0) break;
      const batch = purge.rows.slice(0, Math.min(purge.rows.length, left));
      left -= batch.length;
      plan.push({ purge, batch });
    }
    this.db.transaction(() => {
      for (const { purge, batch } of plan) {
        for (const r of batch) if (this.stmts.deleteKeyFile.run(r.key, r.file).changes > 0) this.stmts.deleteTags.run(r.key);
        if (batch.length === purge.rows.length) this.stmts.deletePending.run(purge.id);
      }
    })();
    for (const { purge, batch } of plan) {
      purge.rows.splice(0, batch.length);
      for (const r of batch) if (this.isGone(r)) this.gone.delete(r.key);
      if (purge.rows.length === 0) this.unswept.splice(this.unswept.indexOf(purge), 1);
    }
  }

  /** The rows a purge names (by index; prefixes and hosts as ranges of the URL index). */
  private find(zoneId: string, selector: PurgeSelector): Located[] {
    let rows: Located[] = [];
    if (selector.kind === "everything") rows = this.stmts.byZone.all(zoneId);
    else if (selector.kind === "urls")
      for (const item of selector.urls) {
        const variant = item.indexOf("\n");
        if (variant < 0) rows.push(...this.stmts.byUrl.all(zoneId, item));
        else {
          // One encoding variant: the key itself (http-cache.ts: zone, URL, encoding class).
          const key = `${zoneId}\n${item}`;
          const row = this.stmts.fileOf.get(key);
          if (row) rows.push({ key, ...row });
        }
      }
    else if (selector.kind === "tags") rows = selector.tags.flatMap((t) => this.stmts.byTag.all(zoneId, t));
    else {
      const prefixes =
        selector.kind === "prefixes"
          ? selector.prefixes.flatMap((p) => [`http://${p}`, `https://${p}`])
          : // A host's objects on any port too (a Worker's Cache API keys keep a port that is not the default).
            selector.hosts.flatMap((h) => [`http://${h}/`, `https://${h}/`, `http://${h}:`, `https://${h}:`]);
      for (const p of prefixes) rows.push(...this.stmts.byPrefix.all(zoneId, p, p + "\u{10ffff}"));
    }
    return [...new Map(rows.map((r) => [r.key, r])).values()];
  }

  /** Purges answered before the last close whose rows may remain: applied now, in full. */
  private replayPending(): Removed {
    const removed: Removed = { keys: [], files: [], bytes: 0 };
    for (const p of this.stmts.pending.all()) {
      let rows: Located[] = [];
      try {
        rows = this.find(p.zone_id, JSON.parse(p.selector) as PurgeSelector);
      } catch {
        // Not understood (a newer version's?): the zone's objects go, more than asked, never less.
        rows = this.find(p.zone_id, { kind: "everything" });
      }
      this.removeRows(rows);
      this.stmts.deletePending.run(p.id);
      for (const r of rows) {
        removed.keys.push(r.key);
        removed.files.push(r.file);
        removed.bytes += r.size;
      }
    }
    return removed;
  }

  private isGone(row: { key: string; file: string }): boolean {
    return this.gone.get(row.key)?.file === row.file;
  }

  /** Everything (a node that may have missed purges drops what it holds). */
  clear(): Removed {
    const rows = this.stmts.all.all().filter((r) => !this.isGone(r));
    this.db.exec("DELETE FROM tags; DELETE FROM objects; DELETE FROM pending_purges;");
    this.gone.clear();
    this.unswept.length = 0;
    return { keys: rows.map((r) => r.key), files: rows.map((r) => r.file), bytes: rows.reduce((n, r) => n + r.size, 0) };
  }

  close(): void {
    this.sweep(Infinity);
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
