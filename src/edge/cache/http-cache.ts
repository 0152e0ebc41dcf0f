import { EventEmitter } from "node:events";
import { unlink, type FileHandle } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import { join } from "node:path";
import type { Readable } from "node:stream";
import type { Logger } from "../../core/logger.js";
import { sendErrorPage, type EdgeErrorCode } from "../origin/error-pages.js";
import type { CacheRules, CacheSettings } from "../ports.js";
import { DiskIndex, type CachedObject, type PurgeSelector, type Removed } from "./disk-index.js";
import { BodyFiles, Fill } from "./fill.js";
import { loadSendfile, sendfileSocket, sendFileBody, type NativeSendfile } from "./sendfile.js";
import { browserCacheControl, cacheKeyQuery, requestVerdict, storeVerdict, type Headers } from "./policy.js";

/** A proxied request as the forwarder resolved it. */
export interface ProxiedRequest {
  zoneId: string;
  /** Lowercase, no port. */
  host: string;
  /** The path and query as sent to the origin. */
  path: string;
  scheme: "http" | "https";
  ray: string;
}

/** The origin's answer (headers already without hop-by-hop ones), or the hosted error code of its failure. */
export type OriginAnswer = { status: number; headers: Headers; body: Readable } | { failure: EdgeErrorCode };

/**
 * How the cache asks the origin (the forwarder's seam): the client's request with the headers in `drop` left out
 * and `set` added, always as GET, cancelled by `signal`'s `abort`.
 */
export type FetchOrigin = (request: { drop: ReadonlySet<string>; set: [string, string][]; signal?: EventEmitter }) => Promise<OriginAnswer>;

/**
 * What a Worker's `cf` options on a fetch to its zone's origin change (edge/cache/worker-cf.ts): cache settings over
 * the zone's Cache Rules, the key (cf.cacheKey, instead of the URL), and tags added to the stored object.
 */
export interface CacheOverrides {
  settings: CacheSettings;
  key?: string;
  tags?: readonly string[];
}

/** What a zone's settings say to the cache. */
export interface ZoneCacheSettings {
  developmentMode(zoneId: string): boolean;
  cacheLevel(zoneId: string): string;
  browserCacheTtl(zoneId: string): number;
}

export interface CacheOptions {
  dir: string;
  maxBytes: number;
  maxObjectBytes: number;
  /**
   * The memory tier's bound (--cache-memory-bytes): bodies of small objects (up to MEMORY_OBJECT_MAX) and the
   * answer heads of recently used ones, least recently used out first; 0 keeps nothing in memory. Default
   * DEFAULT_MEMORY_BYTES.
   */
  memoryBytes?: number;
  /**
   * Whether bodies over MEMORY_OBJECT_MAX go to plain-HTTP clients with sendfile(2) (edge/cache/sendfile.ts) when
   * the addon is there; false streams them in JavaScript (tests of that path). Default true.
   */
  sendfile?: boolean;
  /** A sendfile answer whose client takes nothing for this long is cut (ms; default SENDFILE_IDLE_MS, tests shorten it). */
  sendfileIdleMs?: number;
}

/** The memory tier's bound when the options name none (--cache-memory-bytes' default). */
export const DEFAULT_MEMORY_BYTES = 32 * 1024 * 1024;
/** Bodies at most this large are kept in memory (a HIT of a small object then never touches the disk). */
export const MEMORY_OBJECT_MAX = 64 * 1024;

/**
 * Request headers never sent to the origin on a fill: the answer is stored for every client, so nothing only one
 * client said may shape it (its conditionals and Range: the cache answers those itself; headers some origins build
 * links or routes from — the poisoning vectors).
 */
const FILL_DROPS: ReadonlySet<string> = new Set([
  "if-none-match",
  "if-modified-since",
  "if-match",
  "if-unmodified-since",
  "if-range",
  "range",
  "accept-encoding",
  "x-forwarded-host",
  "x-forwarded-server",
  "x-original-url",
  "x-rewrite-url",
  "x-host",
  "x-http-method-override",
  "cache-control",
  "pragma",
  "content-length",
  "transfer-encoding",
]);

/** Response headers never stored: the cache's own, per-answer ones, and Cache-Tag (kept as the object's tags, never shown). */
const NOT_STORED = new Set(["age", "cf-cache-status", "cf-ray", "cache-tag", "set-cookie", "transfer-encoding", "connection", "keep-alive"]);

/** The settings of a request no Cache Rule applies to (shared: never changed). */
const NO_CACHE_SETTINGS: CacheSettings = Object.freeze({});

/** Entries of the memory tier at most, whatever their size (most are heads of objects whose body stays on disk). */
const HOT_ENTRIES = 10_000;
/** What an entry costs besides its body and header text (the maps, the object, the arrays), as counted. */
const HOT_ENTRY_OVERHEAD = 512;
/** Reads of a stored body streamed to a client (large ones: fewer trips through libuv's thread pool). */
const FILE_READ_CHUNK = 1024 * 1024;
/** Purged rows deleted per turn of the event loop (a few milliseconds of SQLite work). */
const SWEEP_BATCH = 100;

type Outcome =
  | { kind: "filling"; fill: Fill; status: number; headers: [string, string][]; length?: number }
  | { kind: "revalidated"; obj: CachedObject }
  /** Not stored (the origin's directives, size, disk): the body is the starter's; others ask the origin themselves. */
  | { kind: "passed"; status: number; headers: Headers; body: Readable; why: "BYPASS" | "MISS" }
  | { kind: "failed"; code: EdgeErrorCode }
  /** A 5xx answer to a revalidation: stale-if-error may answer instead. */
  | { kind: "origin-error"; status: number; headers: Headers; body: Readable };

interface Inflight {
  outcome: Promise<Outcome>;
}

/**
 * The edge's HTTP cache for proxied traffic (docs/cache.md): a request the hosted defaults (or a Cache Rule) make
 * eligible is answered from disk when fresh, else fetched once from the origin (concurrent misses of one key join
 * that one fill and are streamed from it), stored when the origin's headers allow, revalidated with its validators.
 */
export class EdgeCache {
  private readonly index: DiskIndex;
  private readonly files: BodyFiles;
  private readonly inflight = new Map<string, Inflight>();
  /**
   * The memory tier: recently used objects' rows and answer heads, and the bodies of small ones (bounded by
   * `memoryBytes`, least recently used out first; Map order is the LRU order). The index on disk is the truth: every
   * change of a row (a fill, a revalidation, a purge, an eviction, a removal) drops its entry here.
   */
  private readonly hot = new Map<string, HotEntry>();
  /**
   * The entry at the newest end of `hot`'s order (its last set): a HIT of it leaves the order as it is. The entry, not
   * its key: a request's key is a string built for it, and comparing it with the stored one reads both whole.
   */
  private newestHot: HotEntry | undefined;
  private hotBytes = 0;
  private readonly memoryBytes: number;
  /** The sendfile addon, when big bodies are sent with it. */
  private readonly sendfile: NativeSendfile | undefined;
  /** Bytes on disk (committed) plus bytes of fills in progress. */
  private used: number;
  /** Bumped by every purge of a zone: a fill started before it is not stored. */
  private readonly purgeGeneration = new Map<string, number>();
  private readonly flushTimer: NodeJS.Timeout;

  constructor(
    private readonly options: CacheOptions,
    private readonly zones: ZoneCacheSettings,
    private readonly log: Logger,
    private rules?: CacheRules,
  ) {
    this.memoryBytes = options.memoryBytes ?? DEFAULT_MEMORY_BYTES;
    if (options.sendfile !== false) {
      const loaded = loadSendfile();
      if ("native" in loaded) this.sendfile = loaded.native;
      else log.info({ why: loaded.why }, "big cached bodies are streamed in JavaScript, not with sendfile");
    }
    this.files = new BodyFiles(options.dir);
    this.index = new DiskIndex(join(options.dir, "index.sqlite"));
    this.files.remove(this.index.recovered.files);
    this.used = this.index.totalBytes();
    this.flushTimer = setInterval(() => {
      try {
        this.index.flushAccesses();
      } catch (err) {
        // A full disk: the LRU order lags, nothing else is lost.
        this.log.warn({ err }, "cache accesses not recorded");
      }
    }, 1000).unref();
  }

  /** The Cache Rules port (edge/rules), once the composition root has it. */
  setRules(rules: CacheRules): void {
    this.rules = rules;
  }

  /**
   * Takes a proxied request when it is the cache's (answers true): GET/HEAD of an eligible resource. Otherwise sets
   * `cf-cache-status` (DYNAMIC: not eligible; BYPASS: eligible but not to be cached now) and leaves the request to
   * the forwarder (false).
   */
  handle(req: IncomingMessage, res: ServerResponse, r: ProxiedRequest, fetchOrigin: FetchOrigin, overrides?: CacheOverrides): boolean {
    const q = r.path.indexOf("?");
    const pathname = q < 0 ? r.path : r.path.slice(0, q);
    const query = q < 0 ? "" : r.path.slice(q + 1);
    const method = req.method ?? "GET";
    // A zone without Cache Rules (the usual case) costs a lookup: no request object is built for the rules.
    const zoneRules = this.rules?.hasRules(r.zoneId) ? this.rules : undefined;
    const matched = zoneRules ? zoneRules.settingsFor(r.zoneId, { scheme: r.scheme, host: r.host, path: pathname, query, method }) : NO_CACHE_SETTINGS;
    // A Worker's cf options (fetch to its zone's origin) win over the zone's Cache Rules, as hosted.
    const rules: CacheSettings = overrides ? { ...matched, ...overrides.settings } : matched;
    const verdict = requestVerdict(
      { method, path: pathname, query, authorization: req.headers.authorization !== undefined },
      () => ({ developmentMode: this.zones.developmentMode(r.zoneId), cacheLevel: this.zones.cacheLevel(r.zoneId) }),
      rules,
    );
    if (verdict.use !== "cache" || this.options.maxBytes === 0) {
      // Left to the forwarder, which puts the status on the answer's head with the ray (forwardedCacheStatus).
      markCacheStatus(res, verdict.use === "dynamic" ? "DYNAMIC" : "BYPASS");
      return false;
    }
    req.resume();
    // The key's query: none at cache level "simplified", else as the Cache Rules' cache_key shapes it.
    const keyQuery = verdict.ignoreQuery ? "" : cacheKeyQuery(query, rules.cache_key);
    const url = overrides?.key ?? `${r.scheme}://${r.host}${pathname}${keyQuery !== "" ? `?${keyQuery}` : ""}`;
    const encoding = encodingClass(req.headers["accept-encoding"]);
    // The zone is part of the key: a zone deleted and made again (by anyone) never sees the old one's objects.
    const key = `${r.zoneId}\n${url}\n${encoding}`;
    // The hot path: a fresh object whose body is in memory, asked for whole (no conditional, no Range) with GET.
    const hot = this.hot.get(key);
    if (hot?.body !== undefined && method === "GET" && plainRequest(req)) {
      const now = Date.now();
      if (hot.obj.freshUntil > now) {
        this.sendHot(res, r, rules, key, hot, now);
        return true;
      }
    }
    // Every other answer's head is built with setHeader/writeHead: the ray goes on it whichever path writes it.
    res.setHeader("cf-ray", r.ray);
    const ctx: Ctx = { req, res, r, rules, url, key, encoding, fetchOrigin, head: method === "HEAD", tags: overrides?.tags ?? [] };
    void this.serve(ctx).catch((err: unknown) => {
      this.log.error({ err, host: r.host }, "the cache failed to answer");
      sendErrorPage(res, 520, r.host, r.ray);
    });
    return true;
  }

  /** Removes what a purge names in a zone on this node; answers how many objects went. */
  purge(zoneId: string, selector: PurgeSelector): number {
    this.purgeGeneration.set(zoneId, (this.purgeGeneration.get(zoneId) ?? 0) + 1);
    const n = this.dropRemoved(this.index.purge(zoneId, selector));
    this.scheduleSweep();
    return n;
  }

  /** Purged rows are deleted after the answer, a batch per turn of the event loop (never one long stall). */
  private sweeping = false;
  private scheduleSweep(): void {
    if (this.sweeping || !this.index.hasUnswept()) return;
    this.sweeping = true;
    setImmediate(() => {
      this.sweeping = false;
      try {
        this.index.sweep(SWEEP_BATCH);
      } catch (err) {
        // A full disk: the rows stay marked gone (never served) and the purge stays written down for the next start.
        this.log.warn({ err }, "purged cache rows not deleted yet");
        return;
      }
      this.scheduleSweep();
    });
  }

  /** Drops everything this node holds (notices may have been missed: nothing purged elsewhere may be served). */
  clear(): void {
    for (const zone of [...this.purgeGeneration.keys()]) this.purgeGeneration.set(zone, this.purgeGeneration.get(zone)! + 1);
    this.globalGeneration++;
    this.dropRemoved(this.index.clear());
  }

  stats(): { objects: number; bytes: number } {
    return { objects: this.index.count(), bytes: this.used };
  }

  close(): void {
    clearInterval(this.flushTimer);
    this.index.close();
  }

  private globalGeneration = 0;

  private generation(zoneId: string): string {
    return `${this.globalGeneration}:${this.purgeGeneration.get(zoneId) ?? 0}`;
  }

  private dropRemoved(removed: Removed): number {
    for (const key of removed.keys) this.forgetHot(key);
    this.files.remove(removed.files);
    this.used -= removed.bytes;
    return removed.keys.length;
  }

  private lookup(key: string): CachedObject | undefined {
    const hot = this.hot.get(key);
    if (hot) {
      this.useHot(key, hot);
      return hot.obj;
    }
    return this.index.get(key);
  }

  /**
   * Moves an entry to the newest end of the LRU order (Map order: deleted and set again), unless it is there already:
   * a Map shrinks and grows its table on that delete and set, which a run of HITs of one object would pay each time.
   */
  private useHot(key: string, hot: HotEntry): void {
    if (hot === this.newestHot) return;
    this.hot.delete(key);
    this.hot.set(key, hot);
    this.newestHot = hot;
  }

  /**
   * A HIT from the memory tier, in one write: the head precomputed when the entry was made (only Cache-Control, Age
   * and the ray are per answer) and written with writeHead's list form (no header object is built), then the body.
   */
  private sendHot(res: ServerResponse, r: ProxiedRequest, rules: CacheSettings, key: string, hot: HotEntry, now: number): void {
    this.useHot(key, hot);
    // One access a millisecond is written down for an entry: the index keeps milliseconds, so a second touch in the
    // same one would write the same value (a purge or eviction that drops the index's pending access drops the entry).
    if (hot.touchedAt !== now) {
      hot.touchedAt = now;
      this.index.touch(key, now);
    }
    const obj = hot.obj;
    const cc = hot.browserCacheControl(this.zones.browserCacheTtl(r.zoneId), rules);
    const head = hot.hitHead(cc, String(obj.initialAge + Math.max(0, Math.floor((now - obj.storedAt) / 1000))), r.ray);
    markCacheStatus(res, "HIT");
    res.writeHead(obj.status, head);
    res.end(hot.body);
  }

  private async serve(c: Ctx): Promise<void> {
    const now = Date.now();
    const obj = this.lookup(c.key);
    if (obj && obj.freshUntil > now) return this.sendStored(c, obj, "HIT");
    const running = this.inflight.get(c.key);
    if (obj) {
      const staleFor = now - obj.freshUntil;
      const updatingAllowed = !c.rules.serve_stale?.disable_stale_while_updating;
      // Someone is revalidating it already, or the origin allows stale-while-revalidate: the stale copy now.
      if (updatingAllowed && (running || staleFor < obj.staleWhileRevalidate * 1000)) {
        if (!running) void this.startFill(c, obj).outcome.catch(() => undefined);
        return this.sendStored(c, obj, "UPDATING");
      }
    }
    const inflight = running ?? this.startFill(c, obj);
    const outcome = await inflight.outcome;
    const joined = running !== undefined;
    switch (outcome.kind) {
      case "filling":
        return this.sendFilling(c, outcome, obj ? "EXPIRED" : "MISS");
      case "revalidated":
        return this.sendStored(c, outcome.obj, "REVALIDATED");
      case "passed":
        if (joined) return this.passThrough(c, obj);
        return this.sendPassed(c, outcome.status, outcome.headers, outcome.body, obj ? "EXPIRED" : outcome.why);
      case "origin-error":
      case "failed":
        if (obj && now - obj.freshUntil < obj.staleIfError * 1000) {
          if (outcome.kind === "origin-error" && !joined) outcome.body.resume();
          return this.sendStored(c, obj, "STALE");
        }
        if (outcome.kind === "failed") return sendErrorPage(c.res, outcome.code, c.r.host, c.r.ray);
        if (joined) return this.passThrough(c, obj);
        return this.sendPassed(c, outcome.status, outcome.headers, outcome.body, obj ? "EXPIRED" : "MISS");
    }
  }

  /** A request that joined a fill whose answer was not stored asks the origin itself (as without a cache). */
  private async passThrough(c: Ctx, obj: CachedObject | undefined): Promise<void> {
    const answer = await c.fetchOrigin({ drop: FILL_DROPS, set: acceptEncoding(c.encoding), signal: cancellation(c.res) });
    if ("failure" in answer) return sendErrorPage(c.res, answer.failure, c.r.host, c.r.ray);
    this.sendPassed(c, answer.status, answer.headers, answer.body, obj ? "EXPIRED" : "BYPASS");
  }

  /** Asks the origin for a key (conditionally, when a stored copy has validators) and starts storing its answer. */
  private startFill(c: Ctx, stored: CachedObject | undefined): Inflight {
    const generation = this.generation(c.r.zoneId);
    const inflight: Inflight = { outcome: this.fetchForFill(c, stored, generation) };
    this.inflight.set(c.key, inflight);
    inflight.outcome.then(
      (o) => {
        if (o.kind !== "filling") this.inflight.delete(c.key);
      },
      () => this.inflight.delete(c.key),
    );
    return inflight;
  }

  private async fetchForFill(c: Ctx, stored: CachedObject | undefined, generation: string): Promise<Outcome> {
    const set = acceptEncoding(c.encoding);
    const validators = stored && stored.status === 200 ? storedValidators(stored) : [];
    set.push(...validators);
    // Not cancelled by the client: the fill serves every client that joins it, and the next ones.
    const answer = await c.fetchOrigin({ drop: FILL_DROPS, set });
    if ("failure" in answer) return { kind: "failed", code: answer.failure };
    const now = Date.now();
    if (answer.status === 304 && stored && validators.length > 0) {
      answer.body.resume();
      const verdict = storeVerdict(stored.status, mergeHeaders(stored.headers, answer.headers), c.rules, now);
      const headers = storedHeaders(mergeHeaders(stored.headers, answer.headers));
      const ttl = verdict.store ? verdict.ttl : 0;
      const refreshed: CachedObject = { ...stored, headers, storedAt: now, initialAge: ageOf(answer.headers), freshUntil: now + ttl * 1000 };
      this.index.refresh(stored.key, now, refreshed.freshUntil, refreshed.initialAge, headers);
      this.forgetHot(stored.key);
      return { kind: "revalidated", obj: refreshed };
    }
    if (answer.status >= 500 && stored) return { kind: "origin-error", status: answer.status, headers: answer.headers, body: answer.body };
    const verdict = storeVerdict(answer.status, answer.headers, c.rules, now);
    if (!verdict.store) {
      if (stored) this.dropRemoved(this.index.remove(stored.key));
      return { kind: "passed", status: answer.status, headers: answer.headers, body: answer.body, why: "BYPASS" };
    }
    const declared = Number(one(answer.headers["content-length"]));
    const length = Number.isSafeInteger(declared) && declared >= 0 ? declared : undefined;
    if (length !== undefined && (length > this.options.maxObjectBytes || length > this.options.maxBytes))
      return { kind: "passed", status: answer.status, headers: answer.headers, body: answer.body, why: "MISS" };
    const fill = new Fill(this.files.newTemp(), Math.min(this.options.maxObjectBytes, this.options.maxBytes), (bytes) => this.reserve(bytes));
    const headers = storedHeaders(answer.headers);
    const tags = [...new Set([...cacheTags(answer.headers["cache-tag"]), ...c.tags])];
    const initialAge = ageOf(answer.headers);
    void fill.run(answer.body).then(() => {
      try {
        if (fill.stored && (length === undefined || fill.written === length) && this.generation(c.r.zoneId) === generation) {
          const file = this.files.commit(fill.temp);
          const obj: CachedObject = {
            key: c.key,
            zoneId: c.r.zoneId,
            url: c.url,
            file,
            size: fill.written,
            status: answer.status,
            headers,
            storedAt: now,
            initialAge,
            freshUntil: now + verdict.ttl * 1000,
            staleWhileRevalidate: verdict.staleWhileRevalidate,
            staleIfError: verdict.staleIfError,
          };
          const previous = this.index.put(obj, tags);
          this.forgetHot(c.key);
          if (previous) {
            this.files.remove([previous.file]);
            this.used -= previous.size;
          }
        } else {
          this.used -= fill.diskStop ?? fill.written;
          void unlink(fill.temp).catch(() => undefined);
        }
      } catch (err) {
        this.used -= fill.written;
        this.log.warn({ err, key: c.url }, "a cached body was not stored");
      } finally {
        this.inflight.delete(c.key);
      }
    });
    return { kind: "filling", fill, status: answer.status, headers, length };
  }

  /**
   * The Workers Cache API's lookup (edge/cache/worker-cache.ts): a fresh object under `key` answered as workerd expects
   * it (`cf-cache-status: HIT`, the request's conditionals and Range applied), else 504 with `MISS` (nothing is ever
   * fetched from an origin: `only-if-cached`).
   */
  async matchStored(key: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const obj = this.lookup(key);
    const miss = () => void res.writeHead(504, { "cf-cache-status": "MISS", "content-length": "0" }).end();
    if (!obj || obj.freshUntil <= Date.now()) return miss();
    const file = await this.files.open(obj.file, obj.size);
    if (!file) {
      this.dropRemoved(this.index.remove(obj.key));
      return miss();
    }
    this.index.touch(obj.key, Date.now());
    const headers: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>;
    for (const [name, value] of obj.headers) {
      const prev = headers[name];
      headers[name] = prev === undefined ? value : Array.isArray(prev) ? [...prev, value] : [prev, value];
    }
    headers["cf-cache-status"] = "HIT";
    const send = sendPlan(req, obj.status, headers, obj.size);
    res.writeHead(send.status, send.headers);
    if (send.start === undefined) {
      await file.close();
      return void res.end();
    }
    const stream = file.createReadStream({ start: send.start, end: send.end, highWaterMark: FILE_READ_CHUNK });
    stream.once("error", () => res.destroy());
    res.once("close", () => stream.destroy());
    stream.pipe(res);
  }

  /**
   * Stores a response a Worker put (the Cache API) under `key`, when the stored response's headers allow it as the
   * cache's own rules say (`storeVerdict`: no-store, private, Set-Cookie, a Vary but Accept-Encoding: not stored; the
   * TTL from s-maxage, max-age, Expires, else the default of its status). Answers whether it was stored: a body that
   * broke off, is over the object bound or meets a full disk is not, nor one a purge of the zone overtook.
   */
  async storePut(
    put: { zoneId: string; key: string; url: string },
    answer: { status: number; headers: Headers; body: Readable },
  ): Promise<{ stored: true } | { stored: false; why: string }> {
    const now = Date.now();
    const generation = this.generation(put.zoneId);
    const drop = (why: string) => {
      answer.body.resume();
      return { stored: false as const, why };
    };
    if (this.options.maxBytes === 0) return drop("the cache is off (--cache-max-bytes 0)");
    const verdict = storeVerdict(answer.status, answer.headers, {}, now);
    if (!verdict.store) return drop(verdict.why);
    // Nothing asks the origin again for a Cache API object: one that expires at once would never be matched.
    if (verdict.ttl === 0) return drop("expires at once");
    const declared = Number(one(answer.headers["content-length"]));
    const length = Number.isSafeInteger(declared) && declared >= 0 ? declared : undefined;
    const bound = Math.min(this.options.maxObjectBytes, this.options.maxBytes);
    if (length !== undefined && length > bound) return drop("too large");
    const fill = new Fill(this.files.newTemp(), bound, (bytes) => this.reserve(bytes));
    await fill.run(answer.body);
    if (!fill.stored || (length !== undefined && fill.written !== length) || this.generation(put.zoneId) !== generation) {
      this.used -= fill.diskStop ?? fill.written;
      void unlink(fill.temp).catch(() => undefined);
      return { stored: false, why: fill.failed ? "the body broke off" : "too large, or no room on disk" };
    }
    const obj: CachedObject = {
      key: put.key,
      zoneId: put.zoneId,
      url: put.url,
      file: this.files.commit(fill.temp),
      size: fill.written,
      status: answer.status,
      headers: storedHeaders(answer.headers),
      storedAt: now,
      initialAge: 0,
      freshUntil: now + verdict.ttl * 1000,
      staleWhileRevalidate: verdict.staleWhileRevalidate,
      staleIfError: verdict.staleIfError,
    };
    const previous = this.index.put(obj, cacheTags(answer.headers["cache-tag"]));
    this.forgetHot(put.key);
    if (previous) {
      this.files.remove([previous.file]);
      this.used -= previous.size;
    }
    return { stored: true };
  }

  /** Removes one object (the Cache API's delete); answers whether there was one. */
  removeKey(key: string): boolean {
    return this.dropRemoved(this.index.remove(key)) > 0;
  }

  /** Room for `bytes` more on disk: the least recently used objects go first; false when there is none. */
  private reserve(bytes: number): boolean {
    if (this.used + bytes > this.options.maxBytes) {
      const need = this.used + bytes - this.options.maxBytes;
      const removed = this.index.evict(need);
      this.dropRemoved(removed);
      if (this.used + bytes > this.options.maxBytes) return false;
    }
    this.used += bytes;
    return true;
  }

  private forgetHot(key: string): void {
    const h = this.hot.get(key);
    if (!h) return;
    this.hot.delete(key);
    if (h === this.newestHot) this.newestHot = undefined;
    this.hotBytes -= h.bytes;
  }

  /** What the memory tier holds now: entries, bodies among them, and the bytes counted against its bound (tests). */
  memoryStats(): { entries: number; bodies: number; bytes: number } {
    let bodies = 0;
    for (const h of this.hot.values()) if (h.body !== undefined) bodies++;
    return { entries: this.hot.size, bodies, bytes: this.hotBytes };
  }

  private remember(obj: CachedObject, body: Buffer | undefined): void {
    // Read before an await: a fill or purge since then has replaced or removed it, and this copy is no longer the truth.
    const current = this.index.get(obj.key);
    if (!current || current.file !== obj.file || current.freshUntil !== obj.freshUntil) return;
    this.forgetHot(obj.key);
    const entry = new HotEntry(obj, body);
    // An entry alone over the bound is not kept (its body: the file answers; the bound always holds).
    if (entry.bytes > this.memoryBytes) return;
    this.hot.set(obj.key, entry);
    this.newestHot = entry;
    this.hotBytes += entry.bytes;
    while (this.hot.size > HOT_ENTRIES || this.hotBytes > this.memoryBytes) {
      const oldest = this.hot.keys().next().value as string;
      this.forgetHot(oldest);
    }
  }

  /** Answers a stored object: conditionals, Range and HEAD from the cache; the body from memory or its file. */
  private async sendStored(c: Ctx, obj: CachedObject, status: CacheStatus): Promise<void> {
    const now = Date.now();
    this.index.touch(obj.key, now);
    let body: Buffer | undefined = this.hot.get(obj.key)?.body;
    let file: Awaited<ReturnType<BodyFiles["open"]>>;
    if (!body && !c.head) {
      file = await this.files.open(obj.file, obj.size);
      if (!file) {
        // The file is gone or short (a kill between the index write and the rename, a disk error): no hit.
        this.dropRemoved(this.index.remove(obj.key));
        return this.serve(c);
      }
      if (obj.size <= MEMORY_OBJECT_MAX && this.memoryBytes > 0) {
        const buf = Buffer.allocUnsafe(obj.size);
        const { bytesRead } = await file.read(buf, 0, obj.size, 0).finally(() => file?.close());
        file = undefined;
        if (bytesRead !== obj.size) {
          // Cut short since it was opened (a disk error, a file truncated under us): never answer uninitialised bytes.
          this.dropRemoved(this.index.remove(obj.key));
          return this.serve(c);
        }
        body = buf;
        this.remember(obj, buf);
      }
    } else if (!this.hot.has(obj.key)) this.remember(obj, undefined);
    const headers = this.clientHeaders(c, obj.headers, status);
    headers.age = String(obj.initialAge + Math.max(0, Math.floor((now - obj.storedAt) / 1000)));
    const send = sendPlan(c.req, obj.status, headers, obj.size);
    c.res.writeHead(send.status, send.headers);
    if (c.head || send.start === undefined) {
      await file?.close();
      return void c.res.end();
    }
    if (body) return void c.res.end(send.start === 0 && send.end === obj.size - 1 ? body : body.subarray(send.start, send.end! + 1));
    const length = send.end! - send.start + 1;
    // Big bodies to plain-HTTP/1.1 clients: the kernel copies the file to the socket (sendfile.ts); else streamed.
    const socket = this.sendfile && length > MEMORY_OBJECT_MAX ? sendfileSocket(c.res) : undefined;
    if (socket)
      return sendFileBody(
        this.sendfile!,
        c.res,
        socket,
        file!,
        send.start,
        length,
        (f) => streamFile(c.res, f, send.start!, send.end!),
        this.options.sendfileIdleMs,
      );
    streamFile(c.res, file!, send.start, send.end!);
  }

  /** Answers from a fill in progress (every joined client reads the same file as it grows). */
  private sendFilling(c: Ctx, o: Extract<Outcome, { kind: "filling" }>, status: CacheStatus): void {
    const headers = this.clientHeaders(c, o.headers, status);
    const send = o.length === undefined ? { status: o.status, headers, start: 0, end: undefined } : sendPlan(c.req, o.status, headers, o.length);
    c.res.writeHead(send.status, send.headers);
    if (c.head || send.start === undefined) return void c.res.end();
    const reader = o.fill.reader(send.start, send.end);
    reader.once("error", () => c.res.destroy());
    c.res.once("close", () => reader.destroy());
    reader.pipe(c.res);
  }

  /** Answers what the origin said, not stored. */
  private sendPassed(c: Ctx, status: number, headers: Headers, body: Readable, cacheStatus: CacheStatus): void {
    const out: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>;
    for (const [name, value] of Object.entries(headers)) if (name !== "cache-tag") out[name] = value;
    out["cf-cache-status"] = cacheStatus;
    c.res.writeHead(status, out);
    if (c.head) {
      body.destroy();
      return void c.res.end();
    }
    body.once("error", () => c.res.destroy());
    c.res.once("close", () => {
      if (!c.res.writableFinished) body.destroy();
    });
    body.pipe(c.res);
  }

  private clientHeaders(c: Ctx, stored: [string, string][], status: CacheStatus): Record<string, string | string[]> {
    const out: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>;
    for (const [name, value] of stored) {
      const prev = out[name];
      out[name] = prev === undefined ? value : Array.isArray(prev) ? [...prev, value] : [prev, value];
    }
    const cc = browserCacheControl(out, this.zones.browserCacheTtl(c.r.zoneId), c.rules);
    if (cc === undefined) delete out["cache-control"];
    else out["cache-control"] = cc;
    out["cf-cache-status"] = status;
    return out;
  }
}

type CacheStatus = "HIT" | "MISS" | "EXPIRED" | "STALE" | "BYPASS" | "REVALIDATED" | "UPDATING" | "DYNAMIC";

interface Ctx {
  req: IncomingMessage;
  res: ServerResponse;
  r: ProxiedRequest;
  rules: CacheSettings;
  url: string;
  key: string;
  encoding: string;
  fetchOrigin: FetchOrigin;
  head: boolean;
  /** Tags the object gets besides its Cache-Tag (a Worker's cf.cacheTags). */
  tags: readonly string[];
}

const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);

/** Streams bytes start..end (inclusive) of a stored body's file to the client, through Node (1 MiB reads). */
function streamFile(res: ServerResponse, file: FileHandle, start: number, end: number): void {
  const stream = file.createReadStream({ start, end, highWaterMark: FILE_READ_CHUNK });
  stream.once("error", () => res.destroy());
  res.once("close", () => stream.destroy());
  stream.pipe(res);
}

/**
 * The variant of a key by what the client accepts (Vary: Accept-Encoding, the only Vary the cache keeps): the origin
 * is asked with exactly this, so a compressed body never reaches a client that did not ask for it. purge.ts names
 * one variant of a URL the same way.
 */
export function encodingClass(value: string | string[] | undefined): string {
  if (value === undefined) return "";
  if (typeof value !== "string") return encodingClassOf(value);
  // Clients send a handful of distinct values: each is worked out once (a bounded memo of a pure function).
  let known = encodingClasses.get(value);
  if (known === undefined) {
    known = encodingClassOf(value);
    if (encodingClasses.size >= 256) encodingClasses.clear();
    encodingClasses.set(value, known);
  }
  return known;
}

const encodingClasses = new Map<string, string>();

function encodingClassOf(value: string | string[] | undefined): string {
  const accepted = new Set(
    (Array.isArray(value) ? value.join(",") : (value ?? ""))
      .split(",")
      .map((v) => v.trim().split(";"))
      .filter(([, q]) => q === undefined || !/^\s*q\s*=\s*0(\.0*)?\s*$/i.test(q))
      .map(([name]) => name.toLowerCase()),
  );
  if (accepted.has("br")) return "br";
  if (accepted.has("gzip")) return "gzip";
  return "";
}

const acceptEncoding = (encoding: string): [string, string][] => (encoding === "" ? [] : [["accept-encoding", encoding]]);

/** Cancels an origin request when the client goes away first (the forwarder's signal: `abort` and `aborted`). */
function cancellation(res: ServerResponse): EventEmitter {
  const signal = Object.assign(new EventEmitter(), { aborted: false });
  res.once("close", () => {
    if (res.writableFinished) return;
    signal.aborted = true;
    signal.emit("abort");
  });
  return signal;
}

function storedValidators(obj: CachedObject): [string, string][] {
  const out: [string, string][] = [];
  for (const [name, value] of obj.headers) {
    if (name === "etag") out.push(["if-none-match", value]);
    else if (name === "last-modified") out.push(["if-modified-since", value]);
  }
  return out;
}

function storedHeaders(headers: Headers): [string, string][] {
  const out: [string, string][] = [];
  for (const [name, value] of Object.entries(headers)) {
    if (NOT_STORED.has(name)) continue;
    for (const v of Array.isArray(value) ? value : [value]) out.push([name, v]);
  }
  return out;
}

/** A 304's headers update the stored ones (RFC 9111 4.3.4); its body-describing ones do not. */
function mergeHeaders(stored: [string, string][], fresh: Headers): Headers {
  const out: Headers = Object.create(null) as Headers;
  for (const [name, value] of stored) {
    const prev = out[name];
    out[name] = prev === undefined ? value : Array.isArray(prev) ? [...prev, value] : [prev, value];
  }
  for (const [name, value] of Object.entries(fresh)) {
    if (name === "content-length" || name === "content-encoding" || name === "transfer-encoding" || name === "content-range") continue;
    out[name] = value;
  }
  return out;
}

function ageOf(headers: Headers): number {
  const n = Number(one(headers.age));
  return Number.isInteger(n) && n >= 0 ? Math.min(n, 2 ** 31) : 0;
}

/** Cache-Tag's tags: comma-separated, case-insensitive, at most 1,024 characters each (hosted), 16 KiB in all. */
export function cacheTags(value: string | string[] | undefined): string[] {
  const text = (Array.isArray(value) ? value.join(",") : (value ?? "")).slice(0, 16 * 1024);
  const tags = new Set<string>();
  for (const t of text.split(",")) {
    const tag = t.trim().toLowerCase();
    if (tag !== "" && tag.length <= 1024) tags.add(tag);
  }
  return [...tags];
}

/** Weak comparison of entity tags (If-None-Match). */
function etagMatches(header: string, etag: string): boolean {
  const strip = (t: string) => t.trim().replace(/^W\//, "");
  return header.split(",").some((t) => t.trim() === "*" || strip(t) === strip(etag));
}

/**
 * The answer to a request for a stored body of `size` bytes: 304 for a matching conditional, 206/416 for one
 * satisfiable byte range (several ranges: the whole body), else the whole body. `start` undefined: no body.
 */
function sendPlan(
  req: IncomingMessage,
  status: number,
  headers: Record<string, string | string[]>,
  size: number,
): { status: number; headers: Record<string, string | string[]>; start?: number; end?: number } {
  const etag = one(headers.etag);
  const lastModified = one(headers["last-modified"]);
  if (status === 200) {
    const inm = req.headers["if-none-match"];
    const ims = req.headers["if-modified-since"];
    const notModified =
      inm !== undefined
        ? etag !== undefined && etagMatches(inm, etag)
        : ims !== undefined && lastModified !== undefined && Date.parse(lastModified) <= Date.parse(ims);
    if (notModified) {
      const out: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>;
      for (const name of ["etag", "last-modified", "cache-control", "expires", "vary", "age", "cf-cache-status", "date", "content-location"])
        if (headers[name] !== undefined) out[name] = headers[name];
      return { status: 304, headers: out };
    }
    headers["accept-ranges"] = "bytes";
    const range = req.headers.range;
    const ifRange = req.headers["if-range"];
    const rangeApplies = ifRange === undefined || (etag !== undefined && ifRange === etag && !etag.startsWith("W/")) || ifRange === lastModified;
    if (range !== undefined && rangeApplies) {
      const r = parseRange(range, size);
      if (r === "unsatisfiable") {
        return { status: 416, headers: { ...copy(headers), "content-range": `bytes */${size}`, "content-length": "0" } };
      }
      if (r) {
        return {
          status: 206,
          headers: { ...copy(headers), "content-range": `bytes ${r.start}-${r.end}/${size}`, "content-length": String(r.end - r.start + 1) },
          start: r.start,
          end: r.end,
        };
      }
    }
  }
  headers["content-length"] = String(size);
  return { status, headers, start: size === 0 ? undefined : 0, end: size - 1 };
}

const copy = (h: Record<string, string | string[]>) => Object.assign(Object.create(null) as Record<string, string | string[]>, h);

/** One `bytes=` range; undefined for what is not one (several, another unit): the whole body is sent. */
function parseRange(value: string, size: number): { start: number; end: number } | "unsatisfiable" | undefined {
  const m = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(value);
  if (!m || (m[1] === "" && m[2] === "")) return undefined;
  if (m[1] === "") {
    const n = Number(m[2]);
    if (n === 0) return "unsatisfiable";
    return { start: Math.max(0, size - n), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === "" ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (start >= size || end < start) return "unsatisfiable";
  return { start, end };
}

/** The cache status of answers whose head was written in list form (getHeader cannot read those back). */
const CACHE_STATUS = Symbol("cf-cache-status");

function markCacheStatus(res: ServerResponse, status: CacheStatus): void {
  (res as ServerResponse & { [CACHE_STATUS]?: CacheStatus })[CACHE_STATUS] = status;
}

/**
 * The cf-cache-status of a request the cache left to the forwarder (DYNAMIC or BYPASS; undefined when it was not
 * asked): the forwarder writes it into the answer's head list with the ray, not with setHeader first (a header set
 * before writeHead makes Node build the whole head the slow way, header by header: measured 2–3% of the edge's CPU
 * on a proxied 1 KiB GET).
 */
export function forwardedCacheStatus(res: ServerResponse): "DYNAMIC" | "BYPASS" | undefined {
  const status = (res as ServerResponse & { [CACHE_STATUS]?: CacheStatus })[CACHE_STATUS];
  return status === "DYNAMIC" || status === "BYPASS" ? status : undefined;
}

/** The cf-cache-status an answer got (the metrics and analytics count by it), however its head was written. */
export function cacheStatusOf(res: ServerResponse): string | undefined {
  const set = res.getHeader("cf-cache-status");
  return typeof set === "string" ? set : (res as ServerResponse & { [CACHE_STATUS]?: CacheStatus })[CACHE_STATUS];
}

/** Whether a request asks for the whole body unconditionally (else sendPlan answers it: 304, 206, 416). */
const plainRequest = (req: IncomingMessage) =>
  req.headers["if-none-match"] === undefined && req.headers["if-modified-since"] === undefined && req.headers.range === undefined;

/** One object in the memory tier: its row, its body when small, and its answer head ready for a HIT. */
class HotEntry {
  /**
   * The stored headers as writeHead's name/value list, but those a HIT sets itself (Cache-Control, Content-Length,
   * and for a 200 Accept-Ranges), then Accept-Ranges (200) and Content-Length: what sendPlan makes of a whole body.
   */
  readonly head: string[] = [];
  /** What the entry counts against the memory bound. */
  readonly bytes: number;
  /** When a HIT from memory last wrote its access down (DiskIndex.touch), in ms. */
  touchedAt = 0;
  /** The stored Cache-Control and Expires, what the browser's Cache-Control is worked out from. */
  private readonly freshness: Headers = Object.create(null) as Headers;
  /** The last browser Cache-Control worked out, and for which zone TTL and rule. */
  private browser?: { zoneTtl: number; rule: CacheSettings["browser_ttl"]; value: string | undefined };

  constructor(
    readonly obj: CachedObject,
    readonly body: Buffer | undefined,
  ) {
    let text = obj.key.length;
    for (const [name, value] of obj.headers) {
      text += name.length + value.length;
      if (name === "cache-control" || name === "expires") {
        const prev = this.freshness[name];
        this.freshness[name] = prev === undefined ? value : Array.isArray(prev) ? [...prev, value] : [prev, value];
      }
      if (name !== "cache-control" && name !== "content-length" && (name !== "accept-ranges" || obj.status !== 200)) this.head.push(name, value);
    }
    if (obj.status === 200) this.head.push("accept-ranges", "bytes");
    this.head.push("content-length", String(obj.size));
    // Strings count twice over (the row's copy and the head's share them, but the JSON they came from may not).
    // The HIT heads (hitHead) are two more lists of the head's strings (pointers, 8 bytes each) and four more items.
    this.bytes = (body?.length ?? 0) + 2 * text + HOT_ENTRY_OVERHEAD + 16 * (this.head.length + 8);
  }

  /**
   * writeHead's list for a HIT: `head`, then Cache-Control (when there is one), cf-cache-status, Age and the ray. One
   * list per entry (and per Cache-Control present or not), its per-answer values set in place: writeHead reads it at
   * once and keeps nothing of it, and a HIT writes its head synchronously, so no two answers share it at a time.
   */
  hitHead(cacheControl: string | undefined, age: string, ray: string): string[] {
    let list = cacheControl === undefined ? this.hitHeadBare : this.hitHeadWithCacheControl;
    if (list === undefined) {
      list = [...this.head];
      if (cacheControl !== undefined) list.push("cache-control", "");
      list.push("cf-cache-status", "HIT", "age", "", "cf-ray", "");
      if (cacheControl === undefined) this.hitHeadBare = list;
      else this.hitHeadWithCacheControl = list;
    }
    const n = list.length;
    if (cacheControl !== undefined) list[n - 7] = cacheControl;
    list[n - 3] = age;
    list[n - 1] = ray;
    return list;
  }
  private hitHeadBare?: string[];
  private hitHeadWithCacheControl?: string[];

  /** The browser's Cache-Control for this object in a zone (policy.ts' browserCacheControl), remembered per inputs. */
  browserCacheControl(zoneTtl: number, rules: CacheSettings): string | undefined {
    const b = this.browser;
    if (b !== undefined && b.zoneTtl === zoneTtl && b.rule === rules.browser_ttl) return b.value;
    const value = browserCacheControl(this.freshness, zoneTtl, rules);
    this.browser = { zoneTtl, rule: rules.browser_ttl, value };
    return value;
  }
}
