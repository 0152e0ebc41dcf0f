import { createHash } from "node:crypto";

export interface CachedResponse {
  status: number;
  headers: Record<string, string | string[]>;
  body: Buffer;
  expires: number;
}

const MAX_BYTES = 64 * 1024 * 1024;
export const MAX_ENTRY_BYTES = 8 * 1024 * 1024;

/**
 * Exact-match cache of successful answers, in memory, least recently used out first. Like the hosted
 * gateway's cache it is volatile: a restart empties it, and two identical requests at once may both miss.
 */
export class ResponseCache {
  private readonly entries = new Map<string, CachedResponse>();
  private bytes = 0;

  get(key: string, now = Date.now()): CachedResponse | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    this.entries.delete(key);
    if (e.expires <= now) {
      this.bytes -= e.body.length;
      return undefined;
    }
    this.entries.set(key, e); // most recently used last
    return e;
  }

  set(key: string, e: CachedResponse): void {
    if (e.body.length > MAX_ENTRY_BYTES) return;
    this.drop(key);
    this.entries.set(key, e);
    this.bytes += e.body.length;
    for (const [k] of this.entries) {
      if (this.bytes <= MAX_BYTES) break;
      this.drop(k);
    }
  }

  /** Removes every entry of one gateway (keys start with "<account>/<gateway>:"). */
  dropPrefix(prefix: string): void {
    for (const k of [...this.entries.keys()]) if (k.startsWith(prefix)) this.drop(k);
  }

  clear(): void {
    this.entries.clear();
    this.bytes = 0;
  }

  private drop(key: string): void {
    const e = this.entries.get(key);
    if (e) {
      this.bytes -= e.body.length;
      this.entries.delete(key);
    }
  }
}

/**
 * The cache key of a request: provider, path with query, credential and body, so callers with different
 * provider keys never share answers; or the caller's own key (gw-aig-cache-key) in their place.
 */
export function cacheKey(custom: string | undefined, provider: string, pathAndQuery: string, credentials: readonly string[], body: Buffer): string {
  const h = createHash("sha256");
  if (custom) h.update(`key\0${custom}`);
  else {
    h.update(`${provider}\0${pathAndQuery}\0`);
    for (const c of credentials) h.update(`${c}\0`);
    h.update(body);
  }
  return h.digest("base64url");
}
