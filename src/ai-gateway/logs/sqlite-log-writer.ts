import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import type { Db } from "../../core/db/sqlite.js";
import type { LogDraft } from "./store.js";
import type { PriceTable } from "../metering/prices.js";
import type { LogCount, NewLog } from "./store.js";

/** What crosses to the thread: logs as they are written, or drafts it builds itself (logs/draft.ts). */
type WithBodies = { request_body: Buffer | null; response_body: Buffer | null };

/**
 * A log or draft as it crosses to the writer thread: its bodies are replaced by their lengths (null: none), and the
 * bytes travel in one buffer per batch, in order (request body, then response body, item after item).
 */
export type Wire<T extends WithBodies> = Omit<T, "request_body" | "response_body"> & { request_body: number | null; response_body: number | null };

/**
 * Where a batch's bytes are, in the memory that carries it: the bodies' bytes from offset 0, in order (request body,
 * then response body, item after item), `bodies` bytes in all; then the items' JSON texts, each body replaced by its
 * length, comma-separated and cut into pieces: `pieces` holds the offset where each piece ends (the first starts at
 * `bodies`).
 *
 * The text is cut because one string of a whole batch's items (a few hundred KB at a few thousand logs a second) is
 * larger than V8's largest regular heap object (128 KiB): each such string, made by JSON.stringify on this thread
 * and by decoding on the writer thread, goes to the large-object space, which maps fresh pages for every one. On the
 * benchmark VM, where a page fault costs tens of µs, that was 1.5-4.5 ms per 200 KB string (bench/gateway/
 * log-store.mjs: the thread's hand-over doubled the CPU a log costs, 26 µs against 14 written in place). Pieces of
 * PIECE_BYTES stay in the young generation.
 */
interface Layout {
  bodies: number;
  pieces: number[];
}

/** A batch in memory of its own, moved (not copied) to the thread. */
export interface PackedBatch {
  bytes: ArrayBuffer;
  layout: Layout;
}

/**
 * A batch written into the buffer the thread shares with the main thread. Nothing is allocated, cloned or moved for
 * it: a message of a few numbers says it is there. Measured at 8 clients (bench/gateway/profile-pair.mjs), handing a
 * batch of ~250 logs over in memory of its own, structured-cloned, cost the main thread 12-16 µs a logged request.
 */
export interface SharedBatch {
  shared: Layout;
}

/** The most bytes of item text in one piece (a piece ends after the item that reaches it). */
export const PIECE_BYTES = 32 * 1024;

/** The shared buffer's size: a 100 ms batch of a busy gateway's logs without large payloads fits many times over. */
export const SHARED_BATCH_BYTES = 4 * 1024 * 1024;

/** Messages to the writer thread (sqlite-log-thread.ts). */
export type ToLogThread =
  | ({ op: "append"; id: number; kind: "logs" | "drafts" } & (PackedBatch | SharedBatch))
  | { op: "count"; id: number; accountId: string; gatewayId: string }
  /** The gateway's logs were deleted by the main thread: the count the thread keeps must be read again. */
  | { op: "forget"; accountId: string; gatewayId: string }
  | { op: "close" };

/**
 * What the writer thread starts with: the file, the WAL size in pages past which its commits checkpoint, the
 * buffer shared batches come in, and the prices of the logs it builds.
 */
export interface LogThreadData {
  file: string;
  walAutocheckpoint: number;
  shared: SharedArrayBuffer;
  /** The price table drafts are built with (PriceTable.entries). */
  prices: ReturnType<PriceTable["entries"]>;
}

/** Answers from the writer thread, by the id of the message they answer. */
export type FromLogThread = { id: number; counts?: LogCount[]; count?: number; error?: string };

const THREAD_SCRIPT = fileURLToPath(new URL("./sqlite-log-thread.js", import.meta.url));

const bodyBytes = (batch: readonly WithBodies[]) => batch.reduce((sum, l) => sum + (l.request_body?.length ?? 0) + (l.response_body?.length ?? 0), 0);

/** Each item's JSON text, its bodies replaced by their lengths (null: none). */
const wireTexts = <T extends WithBodies>(batch: readonly T[]): string[] =>
  batch.map((l) => JSON.stringify({ ...l, request_body: l.request_body?.length ?? null, response_body: l.response_body?.length ?? null } satisfies Wire<T>));

/** Bytes the texts take with their separators: at most (a UTF-16 unit is at most 3 bytes of UTF-8), and exactly. */
const mostTextBytes = (texts: readonly string[]) => texts.reduce((n, t) => n + t.length * 3 + 1, 0);
const textBytes = (texts: readonly string[]) => texts.reduce((n, t) => n + Buffer.byteLength(t) + 1, 0);

/** Writes the bodies and the texts into `into` (which has room for them) as Layout says. */
function layOut(batch: readonly WithBodies[], texts: readonly string[], into: Buffer): Layout {
  let at = 0;
  for (const l of batch) {
    if (l.request_body?.length) at += l.request_body.copy(into, at);
    if (l.response_body?.length) at += l.response_body.copy(into, at);
  }
  const bodies = at;
  const pieces: number[] = [];
  let piece = at;
  for (const t of texts) {
    if (at - piece >= PIECE_BYTES) pieces.push((piece = at));
    else if (at > piece) into[at++] = 0x2c; // ","
    at += into.write(t, at);
  }
  if (at > piece) pieces.push(at);
  return { bodies, pieces };
}

/**
 * Packs a batch for the thread: into `shared` when it is given and the batch fits, else into memory of its own
 * (exactly the batch's bytes: a Buffer sent as it is would take its whole backing memory along, a socket's pool say).
 */
export function packBatch<T extends WithBodies>(batch: readonly T[], shared?: Buffer): PackedBatch | SharedBatch {
  const texts = wireTexts(batch);
  const bodies = bodyBytes(batch);
  if (shared && (bodies + mostTextBytes(texts) <= shared.length || bodies + textBytes(texts) <= shared.length)) {
    return { shared: layOut(batch, texts, shared) };
  }
  const own = Buffer.allocUnsafeSlow(bodies + textBytes(texts));
  return { bytes: own.buffer as ArrayBuffer, layout: layOut(batch, texts, own) };
}

/**
 * The batch again, its bodies as views of the memory that came with it: the buffer moved to the thread, or the
 * shared one (those views are read before the batch is answered, and the shared buffer is not written again until
 * then).
 */
export function unpackBatch<T extends WithBodies>(batch: PackedBatch | SharedBatch, shared?: SharedArrayBuffer): T[] {
  const [memory, { bodies, pieces }] = "shared" in batch ? [Buffer.from(shared!), batch.shared] : [Buffer.from(batch.bytes), batch.layout];
  const items: Record<"request_body" | "response_body", number | Buffer | null>[] = [];
  let from = bodies;
  for (const end of pieces) {
    for (const item of JSON.parse(`[${memory.toString("utf8", from, end)}]`) as (typeof items)[number][]) items.push(item);
    from = end;
  }
  let at = 0;
  const take = (n: number | null): Buffer | null => {
    if (n === null) return null;
    const b = memory.subarray(at, at + n);
    at += n;
    return b;
  };
  // The parsed objects are this batch's own: their body lengths are replaced by the bodies where they are.
  for (const l of items) {
    l.request_body = take(l.request_body as number | null);
    l.response_body = take(l.response_body as number | null);
  }
  return items as unknown as T[];
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
  /** The buffer the running thread shares for batches, and the batch in it until answered (one at a time). */
  private shared: { memory: SharedArrayBuffer; bytes: Buffer; heldBy: number | undefined } | undefined;

  /**
   * `db`: the store's connection to the file; the thread opens one of its own, checkpointing as that one does.
   * `prices`: what the logs built from drafts are priced with (handed to each thread as it starts).
   */
  constructor(
    private readonly db: Db,
    private readonly prices: PriceTable,
  ) {}

  /** Writes the batch on the thread; resolves with the counts of its gateways that have a limit (LogStore.append). */
  append(batch: readonly NewLog[]): Promise<LogCount[]> {
    return this.send("logs", batch);
  }

  /** Builds the drafts' logs on the thread and writes them there (LogStore.appendDrafts). */
  appendDrafts(batch: readonly LogDraft[]): Promise<LogCount[]> {
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
    const packed = packBatch(batch, shared.heldBy === undefined ? shared.bytes : undefined);
    if ("shared" in packed) shared.heldBy = id;
    const answer = this.ask(id, { op: "append", id, kind, ...packed }, "bytes" in packed ? [packed.bytes] : []);
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
    const w = new Worker(THREAD_SCRIPT, {
      workerData: { file: this.db.name, walAutocheckpoint, shared: memory, prices: this.prices.entries() } satisfies LogThreadData,
    });
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
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
    };
    w.on("error", fail);
    w.on("exit", (code) => fail(new Error(`the AI gateway log writer thread exited (code ${code})`)));
    this.worker = w;
    return w;
  }
}
