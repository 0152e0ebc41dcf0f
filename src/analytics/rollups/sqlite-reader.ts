import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";

const THREAD_SCRIPT = fileURLToPath(new URL("./sqlite-read-thread.js", import.meta.url));

/** A read the thread runs: one SELECT and its parameters. */
export interface ReadRequest {
  id: number;
  sql: string;
  params: unknown[];
}
export type ReadReply = { id: number; rows: Record<string, unknown>[] } | { id: number; error: string };

/**
 * Runs the rollups' SELECTs on a thread (sqlite-read-thread.ts) with its own read-only connection to `file`. A query
 * of 30 days by minute read 432,000 rows of one zone on the main thread: 250-300 ms of CPU without a turn of the
 * event loop for any tenant, per dataset read (bench/analytics/twenty-reads.mjs). The thread starts with the first
 * read and ends after `idleMs` without one (its memory goes back), or when it fails: the reads waiting are refused
 * and the next read starts another.
 */
export class SqliteRollupReader {
  private worker?: Worker;
  private readonly waiting = new Map<number, { resolve(rows: Record<string, unknown>[]): void; reject(err: Error): void }>();
  private ids = 0;
  private idleTimer?: NodeJS.Timeout;

  constructor(
    private readonly file: string,
    private readonly idleMs = 30_000,
  ) {}

  all(sql: string, params: unknown[]): Promise<Record<string, unknown>[]> {
    clearTimeout(this.idleTimer);
    const worker = this.thread();
    const id = ++this.ids;
    return new Promise((resolve, reject) => {
      // The thread holds the process while a read waits on it (and not otherwise).
      if (this.waiting.size === 0) worker.ref();
      this.waiting.set(id, { resolve, reject });
      worker.postMessage({ id, sql, params } satisfies ReadRequest);
    });
  }

  private thread(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(THREAD_SCRIPT, { workerData: { file: this.file } });
    const fail = (err: Error) => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      for (const w of this.waiting.values()) w.reject(err);
      this.waiting.clear();
    };
    worker.on("message", (reply: ReadReply) => {
      const w = this.waiting.get(reply.id);
      this.waiting.delete(reply.id);
      if ("error" in reply) w?.reject(new Error(reply.error));
      else w?.resolve(reply.rows);
      if (this.waiting.size === 0) {
        worker.unref();
        clearTimeout(this.idleTimer);
        this.idleTimer = setTimeout(() => void this.close(), this.idleMs);
        this.idleTimer.unref();
      }
    });
    worker.on("error", fail);
    worker.on("exit", (code) => fail(new Error(`the analytics read thread exited (code ${code})`)));
    // After the listeners: adding a "message" listener refs the worker's port again.
    worker.unref();
    this.worker = worker;
    return worker;
  }

  /** Ends the thread; reads still waiting are refused (the next read starts another). */
  async close(): Promise<void> {
    clearTimeout(this.idleTimer);
    const worker = this.worker;
    if (!worker) return;
    this.worker = undefined;
    for (const w of this.waiting.values()) w.reject(new Error("the analytics read thread was closed"));
    this.waiting.clear();
    await worker.terminate();
  }
}
