import { createHash, type Hash } from "node:crypto";
import { pipeline, Readable, Transform } from "node:stream";
import { ContentMeter } from "../../core/content/meter.js";
import { ContentTooLargeError, type ContentStore, type StoredContent } from "../../core/content/store.js";
import { readBody } from "../../core/http/body.js";
import { storesWhole } from "./body-policy.js";
import { ContentLeases } from "./content-leases.js";
import { R2Errors } from "../errors.js";
import { conditionHolds } from "./preconditions.js";
import { resolveRange } from "./ranges.js";
import { SmallBodyCache } from "./small-body-cache.js";
import { newVersion, type Segment } from "../rows.js";
import { R2Limits } from "../limits.js";
import { type R2Checksums, type R2GetOptions, type R2GetResult, type R2HttpMetadata, type R2ObjectInfo, type R2PutOptions } from "../store.js";
import { assertCustomMetadata, assertKey, assertStorageClass, cleanHttpMetadata } from "../validation.js";

const EXTRA_DIGESTS = ["sha1", "sha384", "sha512"] as const;

export type StoredBody = StoredContent & { digests: Record<string, string> };
/** A body read whole and measured but not stored: its row will hold it (PostgreSQL keeps small bodies so). */
export type HeldBody = Omit<StoredBody, "id"> & { bytes: Buffer };

/**
 * The bytes of objects and parts, whichever database keeps the rows (sqlite-store.ts, pg-store.ts): written to
 * the content store before a row names them, read under a lease so that an overwrite committed meanwhile cannot
 * remove them mid-read, and small ones served whole from memory. Content ids are never reused and a row only
 * ever names bytes that were whole before it committed, so a cached body can never be stale, on this node or
 * after a change made by another one: the row (always read from the database) says which id to serve.
 */
export class ObjectBodies {
  private readonly leases: ContentLeases;
  /**
   * Small bodies kept by content id, only for a content store that cannot hand them over at once. One that keeps
   * them in a database row (embedded: r2.sqlite) reads one in microseconds, and a copy here would hold up to 32 MiB
   * twice (SQLite's page cache and the OS's file cache already keep the hot ones): docs/benchmarks.md, R2 over S3.
   */
  private readonly small: SmallBodyCache | undefined;

  constructor(private readonly content: ContentStore) {
    this.leases = new ContentLeases(content);
    this.small = content.readSmall ? undefined : new SmallBodyCache();
  }

  /** Streams the body into new content, computing the digests asked for on the way. */
  async store(body: Readable | Buffer, opts: R2PutOptions): Promise<StoredBody> {
    if (!Buffer.isBuffer(body) && storesWhole(opts.size)) {
      const declared = opts.size;
      body = await readBody(body, declared, (_max, received) => R2Errors.sizeMismatch(received ?? declared + 1, declared));
    }
    const hashes = new Map<string, Hash>();
    for (const alg of EXTRA_DIGESTS) if (opts[alg] !== undefined) hashes.set(alg, createHash(alg));
    let source: Readable | Buffer = body;
    if (hashes.size > 0) {
      if (Buffer.isBuffer(body)) for (const h of hashes.values()) h.update(body);
      else
        source = body.pipe(
          new Transform({
            transform(chunk: Buffer, _enc, cb) {
              for (const h of hashes.values()) h.update(chunk);
              cb(null, chunk);
            },
          }),
        );
    }
    let stored: StoredContent;
    try {
      stored = await this.content.put(source, { maxBytes: R2Limits.maxObjectBytes, sha256: opts.sha256 !== undefined });
    } catch (e) {
      if (e instanceof ContentTooLargeError) throw R2Errors.objectTooLarge();
      throw e;
    }
    if (opts.size !== undefined && stored.size !== opts.size) {
      await this.content.delete(stored.id);
      throw R2Errors.sizeMismatch(stored.size, opts.size);
    }
    const digests: Record<string, string> = {};
    for (const [alg, h] of hashes) digests[alg] = h.digest("hex");
    return { ...stored, digests };
  }

  /**
   * A body of known length up to `maxBytes` (a buffer, or a stream announced that small) read whole, with its
   * digests; undefined, leaving the body unread, when it is larger or its length is not announced.
   */
  async hold(body: Readable | Buffer, opts: R2PutOptions, maxBytes: number): Promise<HeldBody | undefined> {
    const declared = Buffer.isBuffer(body) ? body.length : opts.size;
    if (declared === undefined || declared > maxBytes) return undefined;
    const bytes = Buffer.isBuffer(body) ? body : await readBody(body, declared, (_max, received) => R2Errors.sizeMismatch(received ?? declared + 1, declared));
    if (opts.size !== undefined && bytes.length !== opts.size) throw R2Errors.sizeMismatch(bytes.length, opts.size);
    const meter = new ContentMeter(bytes, { sha256: opts.sha256 !== undefined });
    meter.count(bytes);
    const { size, md5, sha256 } = meter.result("");
    const digests: Record<string, string> = {};
    for (const alg of EXTRA_DIGESTS) if (opts[alg] !== undefined) digests[alg] = createHash(alg).update(bytes).digest("hex");
    return { bytes, size, md5, sha256, digests };
  }

  /** Deletes content that never made it into a committed row. */
  async forget(id: string): Promise<void> {
    await this.content.delete(id);
  }

  /**
   * The answer to a get of `object`, made of `segments` (or held whole in its row: `inline`): metadata only when the
   * precondition fails, else the bytes asked for.
   */
  read(object: R2ObjectInfo, segments: Segment[], opts: R2GetOptions, inline?: Buffer): R2GetResult {
    if (opts.onlyIf && !conditionHolds(opts.onlyIf, object)) return { object, body: undefined, preconditionFailed: true };
    const range = resolveRange(opts.range, object.size);
    // Read at once (no lease needed): nothing can remove the bytes between the row and this line.
    const whole = inline ?? (segments.length === 1 ? (this.content.readSmall?.(segments[0][0]) ?? this.small?.get(segments[0][0])) : undefined);
    if (whole) {
      const bytes = whole.subarray(range.offset, range.offset + range.length);
      // The stream is made only for callers that ask for it; the binding backend sends `bytes` as they are.
      return {
        object,
        range,
        bytes,
        get body() {
          return Readable.from([bytes], { objectMode: false });
        },
      };
    }
    let body = this.readSegments(segments, range);
    if (this.small && segments.length === 1 && range.length === object.size && object.size <= this.small.maxEntryBytes)
      body = this.remembering(this.small, segments[0][0], body);
    return { object, body, range };
  }

  /** Content no row refers to any more: removed (after its readers on this node) and forgotten by the cache. */
  discard(ids: readonly string[]): void {
    this.small?.drop(ids);
    this.leases.remove(ids);
  }

  /** Passes a small object's bytes through, keeping a copy for the next read once they all went by. */
  private remembering(small: SmallBodyCache, id: string, source: Readable): Readable {
    const chunks: Buffer[] = [];
    const out = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        chunks.push(chunk);
        cb(null, chunk);
      },
      flush(cb) {
        small.set(id, Buffer.concat(chunks));
        cb();
      },
    });
    // pipeline: an error on either side reaches the reader and closes the file (which ends the lease).
    pipeline(source, out, () => undefined);
    return out;
  }

  /** Streams [offset, offset+length) across the object's segments, holding a lease so a concurrent overwrite cannot remove them mid-read. */
  private readSegments(segments: Segment[], range: { offset: number; length: number }): Readable {
    const ids = segments.map(([id]) => id);
    this.leases.acquire(ids);
    let body: Readable;
    if (segments.length === 1) {
      body = this.content.read(segments[0][0], range);
    } else {
      const content = this.content;
      body = Readable.from(
        (async function* () {
          let start = 0;
          let remaining = range.length;
          for (const [id, size] of segments) {
            const end = start + size;
            if (remaining > 0 && range.offset < end) {
              const offset = Math.max(range.offset - start, 0);
              const length = Math.min(size - offset, remaining);
              remaining -= length;
              yield* content.read(id, { offset, length });
            }
            start = end;
          }
        })(),
        { objectMode: false },
      );
    }
    body.once("close", () => this.leases.release(ids));
    return body;
  }
}

/** Drains a body that will not be stored, so that the request carrying it still ends. */
export function drain(body: Readable | Buffer): undefined {
  if (!Buffer.isBuffer(body)) body.resume();
  return undefined;
}

/** Runs the checks made before a body is read; a refusal drains the body and passes on. */
export async function beforeBody<T>(body: Readable | Buffer, checks: () => T | Promise<T>): Promise<T> {
  try {
    return await checks();
  } catch (e) {
    drain(body);
    throw e;
  }
}

/** The checks of a put made before any byte is stored; returns the cleaned HTTP metadata. */
export function checkPut(key: string, opts: R2PutOptions): R2HttpMetadata {
  assertKey(key);
  assertCustomMetadata(opts.customMetadata);
  const httpMetadata = cleanHttpMetadata(opts.httpMetadata);
  assertStorageClass(opts.storageClass);
  if (opts.size !== undefined && opts.size > R2Limits.maxObjectBytes) throw R2Errors.objectTooLarge();
  return httpMetadata;
}

/** The object a put of `stored` makes; refuses digests that do not match the ones announced. */
export function putObjectInfo(key: string, stored: Omit<StoredBody, "id">, opts: R2PutOptions, httpMetadata: R2HttpMetadata): R2ObjectInfo {
  const checksums: R2Checksums = { md5: stored.md5 };
  const computed: Record<string, string | undefined> = { md5: stored.md5, sha256: stored.sha256, ...stored.digests };
  for (const alg of ["md5", "sha1", "sha256", "sha384", "sha512"] as const) {
    const expected = opts[alg];
    if (expected === undefined) continue;
    if (expected.toLowerCase() !== computed[alg]) throw R2Errors.digestMismatch(alg);
    checksums[alg] = computed[alg];
  }
  return {
    key,
    version: newVersion(),
    size: stored.size,
    etag: stored.md5,
    uploaded: Date.now(),
    httpMetadata,
    customMetadata: { ...opts.customMetadata },
    checksums,
    storageClass: opts.storageClass ?? "Standard",
  };
}

/** A stored part of an upload, as completing it needs. */
export interface StoredPart {
  content_id: string;
  size: number;
  md5: string;
}

/**
 * The object completing an upload makes of the parts listed (`stored`: every part uploaded, by number): its
 * segments are the parts' content, so no byte is copied; `unused` is the content of parts left out.
 */
export function assembleUpload(
  key: string,
  upload: { http: string; custom: string; storage_class: string },
  parts: { partNumber: number; etag: string }[],
  stored: Map<number, StoredPart>,
): { info: R2ObjectInfo; segments: Segment[]; unused: string[] } {
  if (!Array.isArray(parts) || parts.length === 0) throw R2Errors.noParts();
  const segments: Segment[] = [];
  const md5s: Buffer[] = [];
  let size = 0;
  if (parts.some((p, i) => i > 0 && p.partNumber <= parts[i - 1].partNumber)) throw R2Errors.partsOutOfOrder();
  parts.forEach((p, i) => {
    const s = stored.get(p.partNumber);
    if (!s || s.md5 !== String(p.etag).replace(/"/g, "")) throw R2Errors.partMismatch(p.partNumber);
    if (i < parts.length - 1 && s.size < R2Limits.minPartBytes) throw R2Errors.partTooSmall(p.partNumber, s.size);
    segments.push([s.content_id, s.size]);
    md5s.push(Buffer.from(s.md5, "hex"));
    size += s.size;
  });
  const info: R2ObjectInfo = {
    key,
    version: newVersion(),
    size,
    etag: `${createHash("md5").update(Buffer.concat(md5s)).digest("hex")}-${parts.length}`,
    uploaded: Date.now(),
    httpMetadata: JSON.parse(upload.http),
    customMetadata: JSON.parse(upload.custom),
    checksums: {},
    storageClass: upload.storage_class,
  };
  const used = new Set(segments.map(([id]) => id));
  const unused = [...stored.values()].map((p) => p.content_id).filter((id) => !used.has(id));
  return { info, segments, unused };
}

export function assertPartNumber(partNumber: number): void {
  if (!Number.isInteger(partNumber) || partNumber < 1 || partNumber > R2Limits.maxParts) throw R2Errors.partNumberOutOfRange();
}

/** The checks of a new multipart upload; returns its row's fields. */
export function newUploadFields(key: string, opts: { httpMetadata?: unknown; customMetadata?: Record<string, string>; storageClass?: string }) {
  assertKey(key);
  assertCustomMetadata(opts.customMetadata);
  const http = cleanHttpMetadata(opts.httpMetadata);
  const storageClass = assertStorageClass(opts.storageClass);
  return { http: JSON.stringify(http), custom: JSON.stringify(opts.customMetadata ?? {}), storageClass };
}

/**
 * A stream whose length nobody announced (a chunked request, a Worker's ReadableStream) read up to `maxBytes`: the
 * whole body as a buffer when it ended by then, so that a small one can be held in its row like an announced one;
 * otherwise a stream giving the bytes read so far and then the rest. At most `maxBytes` plus one chunk is held.
 * A buffer, or a stream of announced length, is returned as it is.
 */
export async function wholeIfSmall(body: Readable | Buffer, size: number | undefined, maxBytes: number): Promise<Readable | Buffer> {
  if (Buffer.isBuffer(body) || size !== undefined) return body;
  const source = body[Symbol.asyncIterator]() as AsyncIterator<Buffer | Uint8Array | string>;
  const read: Buffer[] = [];
  let total = 0;
  while (total <= maxBytes) {
    const next = await source.next();
    if (next.done) return Buffer.concat(read, total);
    const chunk = Buffer.isBuffer(next.value) ? next.value : Buffer.from(next.value);
    read.push(chunk);
    total += chunk.length;
  }
  async function* replay(): AsyncGenerator<Buffer> {
    try {
      yield* read;
      for (let next = await source.next(); !next.done; next = await source.next()) yield Buffer.isBuffer(next.value) ? next.value : Buffer.from(next.value);
    } finally {
      // Destroyed early (the upload failed): the source is let go too.
      await source.return?.();
    }
  }
  return Readable.from(replay(), { objectMode: false });
}
