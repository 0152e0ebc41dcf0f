import { Readable } from "node:stream";
import type { Db } from "../db/sqlite.js";
import { CONTENT_ID_RE, ContentMeter, newContentId } from "./meter.js";
import { ContentNotFoundError, type ContentStore, type PutOptions, type StoredContent } from "./store.js";

/** Bodies up to this size are kept in the database: SQLite reads and writes them faster than a file of their own. */
export const SMALL_BODY_BYTES = 64 * 1024;

/** Rows looked at per statement while collecting garbage, so a sweep never holds a big result in memory. */
const GC_PAGE = 1000;

/**
 * Small bodies in a table of the area's own SQLite database, larger ones in `large` (the file store). A body
 * written to its own file costs an open, a write, an fsync, a close and a rename, most of a 4 KiB R2 PUT; a row
 * costs a few microseconds. The table is in the same database as the rows that name its bodies, so the WAL keeps
 * them in order: a body's insert commits before the row that names it, and a crash or power loss that loses
 * the body loses that row too (synchronous = NORMAL: docs/reliability.md). Ids are the same 40 hex digits as
 * every other store's; a read looks in the table first (one primary-key lookup) and then in `large`.
 */
export class DbSmallContentStore implements ContentStore {
  private readonly q;

  constructor(
    db: Db,
    /** The table, made by the area's migrations: (id TEXT PRIMARY KEY, created INTEGER NOT NULL, bytes BLOB NOT NULL). */
    table: string,
    private readonly large: ContentStore,
    private readonly maxBytes = SMALL_BODY_BYTES,
  ) {
    this.q = {
      insert: db.prepare(`INSERT INTO ${table} (id, bytes, created) VALUES (?, ?, ?)`),
      bytes: db.prepare<[string], { bytes: Buffer }>(`SELECT bytes FROM ${table} WHERE id = ?`),
      remove: db.prepare<[string]>(`DELETE FROM ${table} WHERE id = ?`),
      olderThan: db.prepare<[number, string, number], { id: string }>(`SELECT id FROM ${table} WHERE created < ? AND id > ? ORDER BY id LIMIT ?`),
    };
  }

  async put(source: Readable | Buffer, opts: PutOptions = {}): Promise<StoredContent> {
    if (Buffer.isBuffer(source)) return source.length <= this.maxBytes ? this.keep(source, opts) : this.large.put(source, opts);
    const head = await readUpTo(source, this.maxBytes);
    if (head.ended) return this.keep(Buffer.concat(head.chunks), opts);
    return this.large.put(Readable.from(continued(head.chunks, source), { objectMode: false }), opts);
  }

  private keep(bytes: Buffer, opts: PutOptions): StoredContent {
    const meter = new ContentMeter(bytes, opts);
    meter.count(bytes);
    const id = newContentId();
    this.q.insert.run(id, bytes, Date.now());
    return meter.result(id);
  }

  /** The bytes of a small body; undefined when `id` is not one (it may be in `large`). */
  readSmall(id: string): Buffer | undefined {
    if (!CONTENT_ID_RE.test(id)) throw new Error(`invalid content id ${JSON.stringify(id)}`);
    return this.q.bytes.get(id)?.bytes;
  }

  read(id: string, range?: { offset: number; length: number }): Readable {
    const bytes = this.readSmall(id);
    if (!bytes) return this.large.read(id, range);
    const part = range ? bytes.subarray(range.offset, range.offset + range.length) : bytes;
    return Readable.from(part.length ? [part] : [], { objectMode: false });
  }

  async readAll(id: string): Promise<Buffer> {
    return this.readSmall(id) ?? this.large.readAll(id);
  }

  async delete(id: string): Promise<void> {
    if (!this.removeSmall(id)) await this.large.delete(id);
  }

  deleteSync(id: string): void {
    if (!this.removeSmall(id)) this.large.deleteSync(id);
  }

  private removeSmall(id: string): boolean {
    if (!CONTENT_ID_RE.test(id)) throw new Error(`invalid content id ${JSON.stringify(id)}`);
    return this.q.remove.run(id).changes > 0;
  }

  async gc(isLive: (id: string) => boolean | Promise<boolean>, graceMs = 60 * 60 * 1000): Promise<number> {
    const cutoff = Date.now() - graceMs;
    let removed = await this.large.gc(isLive, graceMs);
    for (let after = "", page: { id: string }[]; (page = this.q.olderThan.all(cutoff, after, GC_PAGE)).length > 0; after = page[page.length - 1].id) {
      for (const { id } of page) if (!(await isLive(id)) && this.q.remove.run(id).changes > 0) removed++;
    }
    return removed;
  }
}

/** Reads `source` until it ends or holds more than `limit` bytes, then leaves it paused with the rest unread. */
function readUpTo(source: Readable, limit: number): Promise<{ chunks: Buffer[]; ended: boolean }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (ended: boolean) => {
      source.off("data", onData).off("end", onEnd).off("error", reject);
      resolve({ chunks, ended });
    };
    const onData = (chunk: Buffer | string) => {
      const buf = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
      chunks.push(buf);
      size += buf.length;
      if (size > limit) {
        source.pause();
        done(false);
        // Until the reader of the rest attaches (it sees a failure too), an error must not go unheard.
        source.on("error", () => undefined);
      }
    };
    const onEnd = () => done(true);
    source.on("data", onData).once("end", onEnd).once("error", reject);
  });
}

/** The chunks already read, then the rest of `source` (whose errors end the put that reads this). */
async function* continued(head: Buffer[], source: Readable): AsyncGenerator<Buffer> {
  yield* head;
  for await (const chunk of source) yield chunk as Buffer;
}
