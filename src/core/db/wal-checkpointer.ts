import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import type { Logger } from "../logger.js";
import type { Db } from "./sqlite.js";

const THREAD_SCRIPT = fileURLToPath(new URL("./wal-checkpointer-thread.js", import.meta.url));

/**
 * A connection left to itself checkpoints when a commit finds 1,000 pages in the WAL: it copies them into the
 * database file and fsyncs it, inside that commit, on the event loop (10-20 ms on this VM's disk, about once per
 * 250 R2 PUTs of 4 KiB). The platform's connections stop doing that: a thread with connections of its own runs
 * the checkpoints (PASSIVE: it never waits for, nor blocks, a reader or a writer) for every database whose WAL
 * grew, once per `intervalMs`. A connection still checkpoints by itself past `backstopPages` (64 MiB at 4 KiB
 * pages), so the WAL stays bounded should the thread fall behind or die.
 */
export class WalCheckpointer {
  private worker?: Worker;
  private stopped = false;

  constructor(
    private readonly log: Logger,
    private readonly intervalMs = 1000,
    private readonly backstopPages = 16_384,
  ) {}

  /** Takes over the checkpoints of `db` (a file in WAL mode). */
  adopt(db: Db): void {
    if (this.stopped || db.memory || db.readonly) return;
    db.pragma(`wal_autocheckpoint = ${this.backstopPages}`);
    this.thread().postMessage({ op: "add", file: db.name });
  }

  private thread(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(THREAD_SCRIPT, { workerData: { intervalMs: this.intervalMs } });
    worker.on("error", (err) =>
      this.log.error({ err: err.message }, "the SQLite checkpoint thread failed; connections checkpoint by themselves past the backstop"),
    );
    worker.on("message", (m: { file: string; error: string }) => this.log.warn(m, "a SQLite checkpoint failed"));
    // After the listeners: adding a "message" listener refs the worker's port again.
    worker.unref();
    this.worker = worker;
    return worker;
  }

  /**
   * Ends the thread. terminate() rather than a message asking it to stop: it also settles when the thread already
   * exited or never got as far as listening (a platform whose start failed at once), where waiting for an exit
   * kept the process alive. A checkpoint under way finishes first (native code is not interrupted); the
   * databases' own last close checkpoints what is left.
   */
  async close(): Promise<void> {
    this.stopped = true;
    const worker = this.worker;
    this.worker = undefined;
    await worker?.terminate();
  }
}
