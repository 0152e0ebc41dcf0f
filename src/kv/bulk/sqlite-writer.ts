import type { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import type { ContentStore } from "../../core/content/store.js";
import type { Db } from "../../core/db/sqlite.js";
import { CoreErrors, EdgeError, type ErrorDetail } from "../../core/errors.js";
import type { Logger } from "../../core/logger.js";
import type { SqliteKvStore } from "../sqlite-store.js";
import type { KvBulkWriter } from "../store.js";
import { BulkAdmission } from "./slots.js";

/** Messages to the writer thread (sqlite-writer-thread.ts). */
export type ToBulkThread =
  | { op: "open"; bulk: number; namespaceId: string }
  | { op: "chunk"; bulk: number; data: Uint8Array }
  /** The body ended; `error` says why when it could not be read to its end. */
  | { op: "end"; bulk: number; error?: string }
  | { op: "granted"; ticket: number }
  | { op: "contentStored"; ticket: number; id: string }
  | { op: "contentFailed"; ticket: number; error: string }
  | { op: "contentDropped"; ticket: number }
  | { op: "abandonLeftovers" };

/** Messages from the writer thread. */
export type FromBulkThread =
  | { kind: "ack"; bulk: number }
  | { kind: "lock"; bulk: number; ticket: number }
  | { kind: "unlock"; bulk: number; ticket: number }
  | { kind: "putContent"; bulk: number; ticket: number; value: Uint8Array }
  | { kind: "dropContent"; bulk: number; ticket: number; ids: string[] }
  | { kind: "done"; bulk: number; count: number }
  /** `refusal`: the EdgeError the bulk write was refused with (an Error loses its fields between threads); `error`: a bug. */
  | { kind: "failed"; bulk: number; refusal?: { status: number; errors: ErrorDetail[] }; error?: string }
  | { kind: "leftovers"; count: number };

const THREAD_SCRIPT = fileURLToPath(new URL("./sqlite-writer-thread.js", import.meta.url));

/** Chunks of one body sent to the thread and not yet taken by its parser: the rest waits in the socket. */
const CHUNKS_IN_FLIGHT = 4;
interface Session {
  resolve(count: number): void;
  reject(err: Error): void;
  settled: boolean;
  inFlight: number;
  acked?: () => void;
}

/** One run of the writer thread: what it is doing for whom. */
interface Running {
  worker: Worker;
  sessions: Map<number, Session>;
  /** Write turns (SqliteKvStore.exclusive) the thread holds, by ticket: calling one ends that turn. */
  held: Map<number, () => void>;
  dead: boolean;
}

/**
 * Streamed bulk puts on SQLite. The request body goes, chunk by chunk as it arrives, to the writer thread, which
 * parses, validates and stages it and commits it all at once (sqlite-put.ts); the event loop only forwards bytes and grants
 * that thread its turns to write (each a short transaction) among the store's other writes. Memory holds a few
 * chunks, a batch of values and the small per-entry rows of each bulk put under way.
 */
export class SqliteBulkWriter implements KvBulkWriter {
  private running?: Running;
  private stopped = false;
  private seq = 0;
  private readonly admission = new BulkAdmission();

  constructor(
    private readonly db: Db,
    private readonly store: SqliteKvStore,
    private readonly content: ContentStore,
    private readonly log: Logger,
  ) {}

  /** Removes, in the background, what bulk writes of a platform that did not stop cleanly left staged. */
  cleanUpLeftovers(): void {
    if (this.db.prepare("SELECT 1 FROM bulk_writes LIMIT 1").get()) this.thread();
  }

  async write(namespaceId: string, body: Readable | undefined, declaredBytes?: number): Promise<number> {
    const release = await this.admission.admit(declaredBytes);
    try {
      return await this.run(namespaceId, body);
    } finally {
      release();
    }
  }

  private run(namespaceId: string, body: Readable | undefined): Promise<number> {
    if (this.stopped) return Promise.reject(shuttingDown());
    const r = this.thread();
    const bulk = ++this.seq;
    const result = new Promise<number>((resolve, reject) => {
      const session: Session = { resolve, reject, settled: false, inFlight: 0 };
      r.sessions.set(bulk, session);
      r.worker.postMessage({ op: "open", bulk, namespaceId } satisfies ToBulkThread);
      void this.pump(r, bulk, session, body);
    });
    // Whatever the thread did not take of the body is dropped as it arrives.
    return result.finally(() => body?.resume());
  }

  /** Sends the body to the thread, a few chunks ahead of its parser. */
  private async pump(r: Running, bulk: number, session: Session, body: Readable | undefined): Promise<void> {
    const send = (msg: ToBulkThread, transfer: ArrayBuffer[] = []) => r.worker.postMessage(msg, transfer);
    try {
      // Not destroyed if the loop ends early: the request still gets its answer.
      for await (const chunk of body?.iterator({ destroyOnReturn: false }) ?? []) {
        if (session.settled) return;
        // Cloned into the thread's memory (not transferred: the chunk may share its memory with the socket's).
        send({ op: "chunk", bulk, data: chunk as Buffer });
        if (++session.inFlight >= CHUNKS_IN_FLIGHT) await new Promise<void>((resolve) => (session.acked = resolve));
      }
      send({ op: "end", bulk });
    } catch (err) {
      send({ op: "end", bulk, error: (err as Error).message });
    }
  }

  /** The writer thread, started at first use and again after a failure. */
  private thread(): Running {
    if (this.running) return this.running;
    const worker = new Worker(THREAD_SCRIPT, { workerData: { file: this.db.name } });
    const r: Running = { worker, sessions: new Map(), held: new Map(), dead: false };
    worker.on("message", (m: FromBulkThread) => this.onMessage(r, m));
    const fail = (err: Error) => {
      if (r.dead) return;
      r.dead = true;
      if (this.running === r) this.running = undefined;
      for (const s of r.sessions.values()) settle(s, () => s.reject(err));
      r.sessions.clear();
      for (const release of r.held.values()) release();
      r.held.clear();
    };
    worker.on("error", (err) => {
      this.log.error({ err: err.message }, "kv: the bulk writer thread failed");
      fail(err);
    });
    worker.on("exit", (code) => fail(new Error(`the KV bulk writer thread exited (code ${code})`)));
    // First of all, what an earlier run (or a thread that died) left staged goes.
    worker.postMessage({ op: "abandonLeftovers" } satisfies ToBulkThread);
    this.running = r;
    return r;
  }

  private onMessage(r: Running, m: FromBulkThread): void {
    const reply = (msg: ToBulkThread) => r.worker.postMessage(msg);
    switch (m.kind) {
      case "ack": {
        const s = r.sessions.get(m.bulk);
        if (s) {
          s.inFlight--;
          s.acked?.();
          s.acked = undefined;
        }
        return;
      }
      case "lock":
        // The turn ends when the thread says so, or when the thread is gone.
        void this.store.exclusive(() => {
          if (r.dead) return;
          return new Promise<void>((release) => {
            r.held.set(m.ticket, release);
            reply({ op: "granted", ticket: m.ticket });
          });
        });
        return;
      case "unlock":
        r.held.get(m.ticket)?.();
        r.held.delete(m.ticket);
        return;
      case "putContent":
        this.content.put(Buffer.from(m.value.buffer, m.value.byteOffset, m.value.byteLength)).then(
          (c) => reply({ op: "contentStored", ticket: m.ticket, id: c.id }),
          (err: Error) => reply({ op: "contentFailed", ticket: m.ticket, error: err.message }),
        );
        return;
      case "dropContent":
        // Never fails: what cannot be deleted now is left for the content gc.
        void this.store.dropContent(m.ids).then(() => reply({ op: "contentDropped", ticket: m.ticket }));
        return;
      case "done":
      case "failed": {
        const s = r.sessions.get(m.bulk);
        r.sessions.delete(m.bulk);
        if (!s) return;
        if (m.kind === "done") settle(s, () => s.resolve(m.count));
        else if (m.refusal) settle(s, () => s.reject(EdgeError.many(m.refusal!.status, m.refusal!.errors)));
        else settle(s, () => s.reject(new Error(`KV bulk writer: ${m.error}`)));
        return;
      }
      case "leftovers":
        if (m.count) this.log.info({ bulk_writes: m.count }, "kv: removed the staged values of bulk writes a previous run did not finish");
        return;
    }
  }

  /** Fails the bulk puts still waiting or under way (a stopping server has stopped taking requests). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.admission.close(shuttingDown());
    const r = this.running;
    this.running = undefined;
    await r?.worker.terminate();
  }
}

const shuttingDown = () => CoreErrors.shuttingDown("bulk write");

function settle(s: Session, fn: () => void): void {
  if (s.settled) return;
  s.settled = true;
  s.acked?.();
  fn();
}
