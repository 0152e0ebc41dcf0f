import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "../../core/logger.js";
import { D1Errors } from "../errors.js";
import { D1_LIMITS } from "../limits.js";
import type { DumpOptions } from "./dump.js";
import { DatabaseExecutor } from "./executor.js";
import type { PlannedStatement } from "./plan.js";
import type { DatabaseStats, ImportResult } from "./protocol.js";
import type { StatementResult } from "./runner.js";

/** `<state>/d1/<uuid>.sqlite`: one file per database, the platform's own. */
export const D1_DIR = "d1";

/** Where a database's file is: `<dir>/<uuid>.sqlite` (the uuid is the platform's, never a user's string). */
export const databaseFile = (dir: string, uuid: string) => join(dir, `${uuid}.sqlite`);

/** What bounds the engine's processes: each one's memory, and how many may have work at once. */
export interface D1EngineLimits {
  /** Bytes one executor process may allocate (RLIMIT_DATA). */
  executorMemoryBytes: number;
  /** Executors with work at once on this node, and of one account. */
  busyExecutors: number;
  busyExecutorsPerAccount: number;
}

/**
 * The databases' files and the executor processes that run their SQL: at most one executor per database, started
 * on its first request, closed after a minute without one, and the least recently used idle ones closed when more
 * than D1_LIMITS.openExecutors are open (busy ones are never closed, so that bound is soft under load). What bounds
 * memory is admission: a request that would make one more executor busy than the node's or its account's cap allows
 * is refused at once (429), so D1 holds at most busyExecutors x executorMemoryBytes; a request for a database that is
 * already busy waits its turn there and costs nothing more.
 */
export class D1Engine {
  private readonly executors = new Map<string, DatabaseExecutor>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly dir: string,
    private readonly timeoutMs: number,
    private readonly log: Logger,
    private readonly limits: D1EngineLimits,
  ) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.sweeper = setInterval(() => this.closeIdle(D1_LIMITS.executorIdleMs), Math.min(D1_LIMITS.executorIdleMs, 10_000));
    this.sweeper.unref();
  }

  /**
   * The executor to give a job of `accountId`'s database `uuid` to, once admitted: its caller must call `run` before
   * it awaits anything, so that the executor counts as busy for the next admission.
   */
  private executor(accountId: string, uuid: string): DatabaseExecutor {
    let e = this.executors.get(uuid);
    if (e?.busy) return e;
    let busy = 0;
    let busyOfAccount = 0;
    for (const x of this.executors.values()) {
      if (!x.busy) continue;
      busy++;
      if (x.accountId === accountId) busyOfAccount++;
    }
    if (busy >= this.limits.busyExecutors) throw D1Errors.overloaded("node", this.limits.busyExecutors);
    if (busyOfAccount >= this.limits.busyExecutorsPerAccount) throw D1Errors.overloaded("account", this.limits.busyExecutorsPerAccount);
    if (!e) {
      e = new DatabaseExecutor(databaseFile(this.dir, uuid), accountId, this.timeoutMs, this.limits.executorMemoryBytes, this.log);
      this.executors.set(uuid, e);
      if (this.executors.size > D1_LIMITS.openExecutors) this.closeIdle(0);
    }
    return e;
  }

  private closeIdle(olderThanMs: number): void {
    const now = Date.now();
    const idle = [...this.executors].filter(([, e]) => !e.busy && now - e.lastUsed >= olderThanMs).sort((a, b) => a[1].lastUsed - b[1].lastUsed);
    let excess = olderThanMs === 0 ? this.executors.size - D1_LIMITS.openExecutors : idle.length;
    for (const [uuid, e] of idle) {
      if (excess-- <= 0) break;
      this.executors.delete(uuid);
      void e.close();
    }
  }

  /** Each of these refuses with D1Errors.overloaded (429) when the database would be one busy executor too many. */
  async query(accountId: string, uuid: string, statements: PlannedStatement[]): Promise<StatementResult[]> {
    return (await this.executor(accountId, uuid).run({ op: "query", statements })).results!;
  }

  async stats(accountId: string, uuid: string): Promise<DatabaseStats> {
    return (await this.executor(accountId, uuid).run({ op: "stats" })).stats!;
  }

  /** Writes the database as SQL to `path`. */
  async dump(accountId: string, uuid: string, path: string, options: DumpOptions): Promise<void> {
    await this.executor(accountId, uuid).run({ op: "dump", path, options }, this.timeoutMs * 10);
  }

  /** Runs the SQL file at `path` in one transaction. */
  async importSql(accountId: string, uuid: string, path: string): Promise<ImportResult> {
    return (await this.executor(accountId, uuid).run({ op: "import", path }, this.timeoutMs * 10)).imported!;
  }

  /** Closes the database's executor and removes its files. */
  async drop(uuid: string): Promise<void> {
    const e = this.executors.get(uuid);
    this.executors.delete(uuid);
    await e?.close();
    const file = databaseFile(this.dir, uuid);
    for (const suffix of ["", "-wal", "-shm", "-journal"]) rmSync(file + suffix, { force: true });
  }

  async stop(): Promise<void> {
    clearInterval(this.sweeper);
    const all = [...this.executors.values()];
    this.executors.clear();
    await Promise.all(all.map((e) => e.close()));
  }
}
