import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import type { Db } from "../core/db/sqlite.js";
import type { LogDraft } from "./logs/draft.js";
import type { PriceTable } from "./providers/prices.js";
import type { LogCount, NewLog } from "./store.js";

/** What crosses to the thread: logs as they are written, or drafts it builds itself (logs/draft.ts). */
type WithBodies = { request_body: Buffer | null; response_body: Buffer | null };

/**
 * A log or draft as it crosses to the writer thread: its bodies are replaced by their lengths (null: none), and the
 * bytes travel in one buffer per batch, in order (request body, then response body, item after item).
 */
export type Wire<T extends WithBodies> = Omit<T, "request_body" | "response_body"> & { request_body: number | null; response_body: number | null };

/**
 * A batch as it crosses: the items as one JSON text (cheaper to make and to copy than a structured clone of each
 * object), and their bodies' bytes, in order (request body, then response body, item after item).
 */
interface PackedBatch {
  items: string;
  bodies: ArrayBuffer | null;
}

/**
 * A batch written into the buffer the thread shares with the main thread: its bodies' bytes from offset 0, then the
 * items' JSON text (`items` bytes of UTF-8). Nothing is allocated, cloned or moved for it: a message of a few
 * numbers says it is there. Measured at 8 clients (bench/gateway/profile-pair.mjs), handing a batch of ~250 logs
 * over as a PackedBatch cost the main thread 12-16 µs a logged request (the structured clone of the text, and a
 * new ArrayBuffer per batch, both large allocations that the VM pages in afresh each time).
 */
interface SharedBatch {
  shared: { bodies: number; items: number };
}

/** The shared buffer's size: a 100 ms batch of a busy gateway's logs without large payloads fits many times over. */
export const SHARED_BATCH_BYTES = 4 * 1024 * 1024;

/** Messages to the writer thread (sqlite-log-thread.ts). */
export type ToLogThread =
  | ({ op: "append"; id: number; kind: "logs" | "drafts" } & (PackedBatch | SharedBatch))
  /** The price table the drafts that follow are built with (sent before the first of them, and when it changes). */
  | { op: "prices"; entries: ReturnType<PriceTable["entries"]> }
  | { op: "count"; id: number; accountId: string; gatewayId: string }
  /** The gateway's logs were deleted by the main thread: the count the thread keeps must be read again. */
  | { op: "forget"; accountId: string; gatewayId: string }
  | { op: "close" };

/**
 * What the writer thread starts with: the file, the WAL size in pages past which its commits checkpoint, and the
 * buffer shared batches come in.
 */
export interface LogThreadData {
  file: string;
  walAutocheckpoint: number;
  shared: SharedArrayBuffer;
}

/** Answers from the writer thread, by the id of the message they answer. */
export type FromLogThread = { id: number; counts?: LogCount[]; count?: number; error?: string };

const THREAD_SCRIPT = fileURLToPath(new URL("./sqlite-log-thread.js", import.meta.url));

const bodyBytes = (batch: readonly WithBodies[]) => batch.reduce((sum, l) => sum + (l.request_body?.length ?? 0) + (l.response_body?.length ?? 0), 0);

/** The items' JSON text, each body replaced by its length, after `put` has copied the body's bytes (in order). */
function wireItems<T extends WithBodies>(batch: readonly T[], put: (b: Buffer) => void): string {
  const length = (b: Buffer | null): number | null => {
    if (!b) return null;
    if (b.length) put(b);
    return b.length;
  };
  return JSON.stringify(batch.map((l): Wire<T> => ({ ...l, request_body: length(l.request_body), response_body: length(l.response_body) })));
}

/**
 * Packs a batch for the thread: the bodies are copied into one buffer of their own, which is moved, not copied,
 * to the thread (a Buffer sent as it is would take its whole backing memory along: a socket's pool, say).
 */
export function packBatch<T extends WithBodies>(batch: readonly T[]): PackedBatch {
  const total = bodyBytes(batch);
  const bytes = total ? Buffer.allocUnsafeSlow(total) : null;
  let at = 0;
  const items = wireItems(batch, (b) => (at += b.copy(bytes!, at)));
  return { items, bodies: bytes ? (bytes.buffer as ArrayBuffer) : null };
}

/** Writes a batch into the shared buffer `into`; undefined, with nothing written that matters, when it does not fit. */
export function packShared<T extends WithBodies>(batch: readonly T[], into: Buffer): SharedBatch | undefined {
  const total = bodyBytes(batch);
  if (total >= into.length) return undefined;
  let at = 0;
  const items = wireItems(batch, (b) => (at += b.copy(into, at)));
  const room = into.length - total;
  // A UTF-16 unit is at most 3 bytes of UTF-8: counting the bytes is only needed when the room is close.
  if (items.length * 3 > room && Buffer.byteLength(items) > room) return undefined;
  return { shared: { bodies: total, items: into.write(items, total) } };
}

/**
 * The batch again, its bodies as views of the memory that came with it: the buffer moved to the thread, or the
 * shared one (those views are read before the batch is answered, and the shared buffer is not written again until
 * then).
 */
export function unpackBatch<T extends WithBodies>(batch: PackedBatch | SharedBatch, shared?: SharedArrayBuffer): T[] {
  const { items, bodies } =
    "shared" in batch
      ? { items: Buffer.from(shared!).toString("utf8", batch.shared.bodies, batch.shared.bodies + batch.shared.items), bodies: shared! }
      : batch;
  let at = 0;
  const take = (n: number | null): Buffer | null => {
    if (n === null) return null;
    // An empty body may come without a buffer (a batch whose bodies are all empty has none).
    if (n === 0) return Buffer.alloc(0);
    const b = Buffer.from(bodies!, at, n);
    at += n;
    return b;
  };
  // The parsed objects are this batch's own: their body lengths are replaced by the bodies where they are.
  const wire = JSON.parse(items) as Record<"request_body" | "response_body", number | Buffer | null>[];
  for (const l of wire) {
    l.request_body = take(l.request_body as number | null);
    l.response_body = take(l.response_body as number | null);
  }
  return wire as unknown as T[];
}

interface Pending {
  resolve(m: FromLogThread): void;
  reject(err: Error): void;
}

/**
 * The thread that writes logs into the gateway's SQLite file on a connection of its own, so that the inserts, the
 * commit and the WAL checkpoints that follow run beside the event loop instead of on it. Started at first use, and
 * again after it failed. The caller keeps one write to the file going at a time (SqliteLogStore's write turns),
 * so the thread never waits in SQLite's busy handler for the main thread, nor the main thread for it.
 */
export class LogWriterThread {
  private worker: Worker | undefined;
  private readonly pending = new Map<number, Pending>();
  private seq = 0;
  /** The price table the running thread has (none until drafts were first sent; a new thread has none). */
  private prices: PriceTable | undefined;
  /** The buffer the running thread shares for batches, and the batch in it until answered (one at a time). */
  private shared: { memory: SharedArrayBuffer; bytes: Buffer; heldBy: number | undefined } | undefined;

  /** `db`: the store's connection to the file; the thread opens one of its own, checkpointing as that one does. */
  constructor(private readonly db: Db) {}

  /** Writes the batch on the thread; resolves with the counts of its gateways that have a limit (LogStore.append). */
  append(batch: readonly NewLog[]): Promise<LogCount[]> {
    return this.send("logs", batch);
  }

  /** Builds the drafts' logs on the thread, priced with `prices`, and writes them there (LogStore.appendDrafts). */
  appendDrafts(batch: readonly LogDraft[], prices: PriceTable): Promise<LogCount[]> {
    const w = this.thread();
    if (this.prices !== prices) {
      w.postMessage({ op: "prices", entries: prices.entries() } satisfies ToLogThread);
      this.prices = prices;
    }
    return this.send("drafts", batch);
  }

  /**
   * Sends a batch in the shared buffer when it is free and the batch fits (the store sends one batch at a time, so
   * it is), else packed in memory of its own (a batch with large payloads; or a second batch while one is in it).
   */
  private async send(kind: "logs" | "drafts", batch: readonly WithBodies[]): Promise<LogCount[]> {
    this.thread();
    const shared = this.shared!;
    const id = ++this.seq;
    const inShared = shared.heldBy === undefined ? packShared(batch, shared.bytes) : undefined;
    let answer: Promise<FromLogThread>;
    if (inShared) {
      shared.heldBy = id;
      answer = this.ask(id, { op: "append", id, kind, ...inShared });
    } else {
      const packed = packBatch(batch);
      answer = this.ask(id, { op: "append", id, kind, ...packed }, packed.bodies ? [packed.bodies] : []);
    }
    try {
      return (await answer).counts!;
    } finally {
      // Answered (or the thread is gone): the thread no longer reads the batch's bytes.
      if (shared.heldBy === id) shared.heldBy = undefined;
    }
  }

  async count(accountId: string, gatewayId: string): Promise<number> {
    const id = ++this.seq;
    return (await this.ask(id, { op: "count", id, accountId, gatewayId })).count!;
  }

  /** Tells the thread that a gateway's logs were deleted (in the order of the messages: before any later batch). */
  forget(accountId: string, gatewayId: string): void {
    this.worker?.postMessage({ op: "forget", accountId, gatewayId } satisfies ToLogThread);
  }

  /** Lets the thread close its connection and end; what was sent before is written first. */
  async close(): Promise<void> {
    const w = this.worker;
    if (!w) return;
    const ended = new Promise<void>((resolve) => w.once("exit", () => resolve()));
    w.ref();
    w.postMessage({ op: "close" } satisfies ToLogThread);
    await ended;
  }

  private ask(id: number, msg: ToLogThread, transfer: ArrayBuffer[] = []): Promise<FromLogThread> {
    return new Promise((resolve, reject) => {
      const w = this.thread();
      // Awaited answers keep the process alive; an idle thread does not (the platform closes it when it stops).
      if (this.pending.size === 0) w.ref();
      this.pending.set(id, { resolve, reject });
      w.postMessage(msg, transfer);
    });
  }

  private thread(): Worker {
    if (this.worker) return this.worker;
    // The thread's connection checkpoints as the store's does: where the platform's checkpoint thread has taken the
    // file over (core/db/wal-checkpointer.ts), only past its backstop, so the log commits on this thread do not also
    // copy the WAL into the file every 1,000 pages, work the checkpoint thread does once a second anyway.
    const walAutocheckpoint = this.db.pragma("wal_autocheckpoint", { simple: true }) as number;
    // A buffer of its own for each thread: one that failed may still have been reading the last.
    const memory = new SharedArrayBuffer(SHARED_BATCH_BYTES);
    this.shared = { memory, bytes: Buffer.from(memory), heldBy: undefined };
    const w = new Worker(THREAD_SCRIPT, { workerData: { file: this.db.name, walAutocheckpoint, shared: memory } satisfies LogThreadData });
    w.unref();
    w.on("message", (m: FromLogThread) => {
      const p = this.pending.get(m.id);
      this.pending.delete(m.id);
      if (this.pending.size === 0) w.unref();
      if (m.error !== undefined) p?.reject(new Error(`AI gateway log writer: ${m.error}`));
      else p?.resolve(m);
    });
    const fail = (err: Error) => {
      if (this.worker !== w) return;
      this.worker = undefined;
      this.prices = undefined;
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
    };
    w.on("error", fail);
    w.on("exit", (code) => fail(new Error(`the AI gateway log writer thread exited (code ${code})`)));
    this.worker = w;
    return w;
  }
}
