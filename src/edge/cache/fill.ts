import { randomBytes } from "node:crypto";
import { EventEmitter } from "node:events";
import { mkdirSync, readdirSync, renameSync, rmSync } from "node:fs";
import { open, unlink, type FileHandle } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import { collectGarbage } from "../../core/http/relay.js";
import { trimFreedMemory } from "../../core/os/os.js";

/**
 * Where bodies live: `tmp/` while they are filled, `objects/<2 hex>/<id>` once complete. A body is renamed into
 * `objects/` only when every byte is written, so a `kill -9` mid-fill leaves at most a file in `tmp/` (emptied at
 * start), never a short body under a name the index points at.
 */
export class BodyFiles {
  constructor(readonly dir: string) {
    rmSync(join(dir, "tmp"), { recursive: true, force: true });
    mkdirSync(join(dir, "tmp"), { recursive: true, mode: 0o700 });
    mkdirSync(join(dir, "objects"), { recursive: true, mode: 0o700 });
  }

  newTemp(): string {
    return join(this.dir, "tmp", randomBytes(12).toString("hex"));
  }

  /** Moves a complete temp file into place; answers its name relative to `objects/`. */
  commit(temp: string): string {
    const id = randomBytes(12).toString("hex");
    const sub = id.slice(0, 2);
    mkdirSync(join(this.dir, "objects", sub), { recursive: true });
    renameSync(temp, join(this.dir, "objects", sub, id));
    return `${sub}/${id}`;
  }

  path(file: string): string {
    return join(this.dir, "objects", file);
  }

  /** Opens a stored body, or undefined when it is missing or not of the size the index has (then it is no hit). */
  async open(file: string, size: number): Promise<FileHandle | undefined> {
    let fh: FileHandle | undefined;
    try {
      fh = await open(this.path(file), "r");
      if ((await fh.stat()).size === size) return fh;
    } catch {
      // Missing: the row outlived its file (a kill between the index write and the rename).
    }
    await fh?.close().catch(() => undefined);
    return undefined;
  }

  remove(files: readonly string[]): void {
    for (const f of files) void unlink(this.path(f)).catch(() => undefined);
  }

  /** How many bodies are in objects/ (tests). */
  countFiles(): number {
    let n = 0;
    for (const sub of readdirSync(join(this.dir, "objects"))) n += readdirSync(join(this.dir, "objects", sub)).length;
    return n;
  }
}

/** The most of a body held in memory for readers once the disk refused it (then the origin waits for the slowest). */
const MEMORY_TAIL_BYTES = 4 * 1024 * 1024;
const READ_CHUNK = 64 * 1024;
/**
 * The origin's last chunks written to the file, kept for readers that are that close behind: they are handed the
 * chunk itself instead of a copy read back from the file. A reader keeping up with the origin (the usual first
 * client of a fill) then costs no read and no buffer of its own: a 100 MiB fill allocated 100 MiB of read buffers,
 * which waited for a collection and raised the platform's peak RSS (docs/benchmarks.md, "Resident memory").
 */
const RECENT_BYTES = 512 * 1024;
/** A fill this large, once done with, gives back what the C library kept of its buffers (afterLargeFill). */
const TRIM_AFTER_BYTES = 16 * 1024 * 1024;
/** A fill collects the young generation this often (~0.4 ms each, ~5 µs a 64 KiB chunk). */
const COLLECT_EVERY_BYTES = 8 * 1024 * 1024;
let trimQueued = false;

/**
 * A large fill's 64 KiB buffers pile up (to V8's external-memory trigger) before a collection frees them, and glibc
 * keeps what was freed for reuse, up to the trim threshold relay.ts raises: ~35 MiB resident in every event loop that
 * filled a large object (docs/benchmarks.md, "Edge threads"). Once the fill's last reader is done its chunks are
 * garbage: a young collection frees them and the C library's trim gives them back, once for fills that end together.
 */
function afterLargeFill(): void {
  if (trimQueued) return;
  trimQueued = true;
  setImmediate(() => {
    trimQueued = false;
    collectGarbage("minor");
    trimFreedMemory();
  }).unref();
}

/**
 * One origin answer being written to a temp file, read by every client that asked for it meanwhile (concurrent
 * misses of one key share it; each reads at its own pace from the file). When the disk refuses a write (full,
 * over --cache-max-bytes) the fill stops storing and keeps the rest in memory for its readers, bounded: the origin
 * is paused while the slowest reader is MEMORY_TAIL_BYTES behind. Nothing is served truncated: a reader ends only
 * at the origin's end; an origin that breaks off breaks the readers' connections (their length shows it).
 */
export class Fill extends EventEmitter {
  /** Bytes written to the file (readable there). */
  written = 0;
  /** `written` at the last young collection of this fill. */
  private collectedAt = 0;
  /** The origin's body ended (complete) or broke. */
  ended = false;
  failed = false;
  /** Bytes in the file when the disk refused more; later bytes are in `tail`. */
  diskStop: number | undefined;
  private tail: Buffer[] = [];
  /** The last chunks written to the file (at most RECENT_BYTES, and what one chunk holds), from `recentStart` on. */
  private recent: Buffer[] = [];
  private recentStart = 0;
  private recentBytes = 0;
  private tailStart = 0;
  private tailBytes = 0;
  private readonly readers = new Set<FillReader>();
  private fh: FileHandle | undefined;
  private paused?: () => void;

  constructor(
    readonly temp: string,
    /** The most the object may hold; beyond it the fill stops storing (the body still reaches the readers). */
    private readonly maxBytes: number,
    /** Asks for room for `bytes` more (false: the cache is full of objects being filled, or over its bound). */
    private readonly reserve: (bytes: number) => boolean,
  ) {
    super();
    this.setMaxListeners(0);
  }

  get stored(): boolean {
    return this.diskStop === undefined && !this.failed;
  }

  /** Copies `body` into the file (and to the readers); resolves when the origin's body ended or broke. */
  async run(body: Readable): Promise<void> {
    try {
      this.fh = await open(this.temp, "w+", 0o600);
    } catch {
      this.stopDisk();
    }
    try {
      for await (const chunk of body as AsyncIterable<Buffer>) {
        if (this.diskStop === undefined) {
          if (this.written + chunk.length > this.maxBytes || !this.reserve(chunk.length)) this.stopDisk();
          else
            try {
              let off = 0;
              while (off < chunk.length) off += (await this.fh!.write(chunk, off, chunk.length - off)).bytesWritten;
              this.keepRecent(chunk);
              this.written += chunk.length;
              // The chunks written so far are garbage (but the recent ones): collected every few MiB rather than
              // piling up to V8's external-memory trigger, so that fewer are resident at once.
              if (this.written - this.collectedAt >= COLLECT_EVERY_BYTES) {
                this.collectedAt = this.written;
                collectGarbage("minor");
              }
              this.emit("progress");
              continue;
            } catch {
              this.stopDisk();
            }
        }
        this.tail.push(chunk);
        this.tailBytes += chunk.length;
        this.emit("progress");
        this.trimTail();
        if (this.tailBytes > MEMORY_TAIL_BYTES && this.readers.size > 0) await new Promise<void>((resolve) => (this.paused = resolve));
      }
      this.ended = true;
    } catch {
      this.failed = true;
      this.ended = true;
    }
    this.emit("progress");
    this.closeWhenUnused();
  }

  /** The file is read by the readers through the fill's own handle (it stays valid once renamed or unlinked). */
  private closeWhenUnused(): void {
    if (!this.ended || this.readers.size > 0 || !this.fh) return;
    void this.fh.close().catch(() => undefined);
    this.fh = undefined;
    this.recent = [];
    this.recentBytes = 0;
    if (this.written >= TRIM_AFTER_BYTES) afterLargeFill();
  }

  /** A stream of the body from `start` to `end` (inclusive; undefined: to the end), as it arrives. */
  reader(start = 0, end?: number): Readable {
    const r = new FillReader(this, start, end);
    this.readers.add(r);
    r.once("close", () => {
      this.readers.delete(r);
      this.release();
    });
    return r;
  }

  /** Keeps `chunk` (just written at `written`) among the recent ones, dropping the oldest beyond RECENT_BYTES. */
  private keepRecent(chunk: Buffer): void {
    if (this.recentStart + this.recentBytes !== this.written) {
      this.recent = [];
      this.recentStart = this.written;
      this.recentBytes = 0;
    }
    this.recent.push(chunk);
    this.recentBytes += chunk.length;
    while (this.recentBytes - this.recent[0].length >= RECENT_BYTES) {
      const first = this.recent.shift()!;
      this.recentStart += first.length;
      this.recentBytes -= first.length;
    }
  }

  /** Reads what is available at `pos` (from the recent chunks, the file or the memory tail); undefined when nothing is yet. */
  async readAt(pos: number, max: number, handle: () => Promise<FileHandle>): Promise<Buffer | undefined> {
    const inFile = this.diskStop ?? this.written;
    if (pos >= this.recentStart && pos < Math.min(inFile, this.recentStart + this.recentBytes)) {
      let at = this.recentStart;
      for (const chunk of this.recent) {
        if (pos < at + chunk.length) return chunk.subarray(pos - at, Math.min(chunk.length, pos - at + max));
        at += chunk.length;
      }
    }
    if (pos < inFile) {
      const buf = Buffer.allocUnsafe(Math.min(max, inFile - pos));
      const { bytesRead } = await (await handle()).read(buf, 0, buf.length, pos);
      return buf.subarray(0, bytesRead);
    }
    if (this.diskStop === undefined) return undefined;
    let at = this.diskStop + this.tailStart;
    for (const chunk of this.tail) {
      if (pos < at + chunk.length) return chunk.subarray(pos - at, Math.min(chunk.length, pos - at + max));
      at += chunk.length;
    }
    return undefined;
  }

  /** The handle readers read the file through. */
  async handle(): Promise<FileHandle> {
    if (!this.fh) throw new Error("the body being filled is gone");
    return this.fh;
  }

  /** Bytes available to read now. */
  available(): number {
    return this.diskStop === undefined ? this.written : this.diskStop + this.tailStart + this.tailBytes;
  }

  private stopDisk(): void {
    if (this.diskStop !== undefined) return;
    this.diskStop = this.written;
    void unlink(this.temp).catch(() => undefined);
  }

  /** Drops the memory tail every reader has passed, and lets the origin go on when the slowest caught up. */
  trimTail(): void {
    if (this.diskStop === undefined) return;
    let slowest = Infinity;
    for (const r of this.readers) slowest = Math.min(slowest, r.position);
    if (slowest === Infinity) slowest = this.available();
    while (this.tail.length > 0 && this.diskStop + this.tailStart + this.tail[0].length <= slowest) {
      const first = this.tail.shift()!;
      this.tailStart += first.length;
      this.tailBytes -= first.length;
    }
    if (this.paused && this.tailBytes <= MEMORY_TAIL_BYTES / 2) {
      const go = this.paused;
      this.paused = undefined;
      go();
    }
  }

  private release(): void {
    this.trimTail();
    if (this.readers.size === 0 && this.paused) {
      const go = this.paused;
      this.paused = undefined;
      go();
    }
    this.closeWhenUnused();
  }
}

class FillReader extends Readable {
  position: number;
  private reading = false;
  private readonly handle = () => this.fill.handle();

  constructor(
    private readonly fill: Fill,
    start: number,
    private readonly end: number | undefined,
  ) {
    super({ highWaterMark: READ_CHUNK });
    this.position = start;
    this.onProgress = this.onProgress.bind(this);
  }

  override _read(): void {
    void this.pump();
  }

  override _destroy(err: Error | null, cb: (err: Error | null) => void): void {
    this.fill.off("progress", this.onProgress);
    cb(err);
  }

  private onProgress(): void {
    this.fill.off("progress", this.onProgress);
    void this.pump();
  }

  private async pump(): Promise<void> {
    if (this.reading || this.destroyed) return;
    this.reading = true;
    try {
      for (;;) {
        const limit = this.end === undefined ? Infinity : this.end + 1;
        if (this.position >= limit) return void this.push(null);
        const chunk =
          this.position < this.fill.available() ? await this.fill.readAt(this.position, Math.min(READ_CHUNK, limit - this.position), this.handle) : undefined;
        if (this.destroyed) return;
        if (chunk && chunk.length > 0) {
          this.position += chunk.length;
          this.fill.trimTail();
          if (!this.push(chunk)) return;
          continue;
        }
        if (this.fill.ended) {
          if (this.fill.failed || (this.end !== undefined && this.position <= this.end)) this.destroy(new Error("the origin's body broke off"));
          else this.push(null);
          return;
        }
        this.fill.once("progress", this.onProgress);
        return;
      }
    } catch (err) {
      this.destroy(err as Error);
    } finally {
      this.reading = false;
    }
  }
}
