import type { KvEntry } from "./store.js";

export interface KvReadCacheLimits {
  /** Entries kept at most (least recently used out first). */
  maxEntries: number;
  /** Bytes of keys and values kept at most. */
  maxBytes: number;
  /** Values bigger than this are never kept. */
  maxValueBytes: number;
  /** An entry is served from memory for at most this long after it was read: the bound on staleness when a notice is lost. */
  maxAgeMs: number;
}

/** What a node keeps: the hosted KV's own default cache TTL (60 s) as the worst case, 16 MiB. */
export const KV_READ_CACHE_DEFAULTS: KvReadCacheLimits = { maxEntries: 20_000, maxBytes: 16 * 1024 * 1024, maxValueBytes: 64 * 1024, maxAgeMs: 60_000 };

/** An answer read from the database: the entry, or null when the key was missing. */
type Cached = { entry: KvEntry | null; bytes: number; until: number; namespaceId: string };

/** A namespace known to exist, with its account and title. */
export interface CachedNamespace {
  accountId: string;
  title: string;
}

/** Bytes a cached answer is counted for: its key, value and metadata (plus a little for the bookkeeping). */
const sizeOf = (key: string, entry: KvEntry | null) =>
  64 + key.length * 2 + (entry ? entry.value.length + (entry.metadata === null ? 0 : JSON.stringify(entry.metadata).length) : 0);

/**
 * A node's memory of KV answers (entries, misses, namespaces) read from PostgreSQL, so that a hot key costs no round
 * trip. Eventually consistent, as the hosted KV is: a write or delete through this node drops what it changed at once
 * (this node reads its own writes), one through another node when its bus notice arrives (milliseconds), and nothing
 * is served older than `maxAgeMs` whatever happens to notices. A read that was under way when anything was dropped
 * does not fill the cache (its answer may predate the change); an entry past its own expiration is never served.
 */
export class KvReadCache {
  private readonly entries = new Map<string, Cached>();
  private readonly namespaces = new Map<string, CachedNamespace & { until: number }>();
  private bytes = 0;
  /** Bumped by every drop: a fill started before it is refused. */
  private generation = 0;

  constructor(
    readonly limits: KvReadCacheLimits = KV_READ_CACHE_DEFAULTS,
    private readonly now: () => number = Date.now,
  ) {}

  /** Taken before a read of the database; hand it back to `fill`. */
  ticket(): number {
    return this.generation;
  }

  /** The answer kept for the key: an entry, null for a known miss, undefined when nothing usable is kept. */
  get(namespaceId: string, key: string): KvEntry | null | undefined {
    const id = cacheKey(namespaceId, key);
    const hit = this.entries.get(id);
    if (!hit) return undefined;
    const now = this.now();
    if (hit.until <= now || (hit.entry?.expiration != null && hit.entry.expiration * 1000 <= now)) {
      this.remove(id, hit);
      return undefined;
    }
    // Most recently used last.
    this.entries.delete(id);
    this.entries.set(id, hit);
    return hit.entry;
  }

  /** Keeps what a read that took `ticket` found, unless something was dropped since or the value is too big. */
  fill(ticket: number, namespaceId: string, key: string, entry: KvEntry | null): void {
    if (ticket !== this.generation || (entry && entry.value.length > this.limits.maxValueBytes)) return;
    const id = cacheKey(namespaceId, key);
    const old = this.entries.get(id);
    if (old) this.remove(id, old);
    const bytes = sizeOf(key, entry);
    if (bytes > this.limits.maxBytes) return;
    this.entries.set(id, { entry, bytes, until: this.now() + this.limits.maxAgeMs, namespaceId });
    this.bytes += bytes;
    for (const [oldest, c] of this.entries) {
      if (this.bytes <= this.limits.maxBytes && this.entries.size <= this.limits.maxEntries) break;
      this.remove(oldest, c);
    }
  }

  namespace(namespaceId: string): CachedNamespace | undefined {
    const ns = this.namespaces.get(namespaceId);
    if (ns && ns.until > this.now()) return ns;
    if (ns) this.namespaces.delete(namespaceId);
    return undefined;
  }

  fillNamespace(ticket: number, namespaceId: string, ns: CachedNamespace): void {
    if (ticket !== this.generation) return;
    if (this.namespaces.size >= this.limits.maxEntries) this.namespaces.delete(this.namespaces.keys().next().value!);
    this.namespaces.set(namespaceId, { ...ns, until: this.now() + this.limits.maxAgeMs });
  }

  /** Forgets the keys of one namespace (written or deleted). */
  dropKeys(namespaceId: string, keys: readonly string[]): void {
    this.generation++;
    for (const key of keys) {
      const id = cacheKey(namespaceId, key);
      const hit = this.entries.get(id);
      if (hit) this.remove(id, hit);
    }
  }

  /** Forgets a namespace and every key of it (a bulk write, a rename, a delete). */
  dropNamespace(namespaceId: string): void {
    this.generation++;
    this.namespaces.delete(namespaceId);
    for (const [id, c] of this.entries) if (c.namespaceId === namespaceId) this.remove(id, c);
  }

  /** Forgets everything (notices may have been lost). */
  clear(): void {
    this.generation++;
    this.entries.clear();
    this.namespaces.clear();
    this.bytes = 0;
  }

  get size(): { entries: number; bytes: number } {
    return { entries: this.entries.size, bytes: this.bytes };
  }

  private remove(id: string, c: Cached): void {
    this.entries.delete(id);
    this.bytes -= c.bytes;
  }
}

/** Prefixed with the namespace id's length, so that no two (namespace, key) pairs share one (ids may hold any character). */
const cacheKey = (namespaceId: string, key: string) => `${namespaceId.length}:${namespaceId}/${key}`;
