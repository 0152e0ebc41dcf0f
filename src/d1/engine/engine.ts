import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "../../core/logger.js";
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

/**
 * The databases' files and the executor processes that run their SQL: at most one executor per database, started
 * on its first request, closed after a minute without one, and the least recently used idle ones closed when more
 * than D1_LIMITS.openExecutors are open (busy ones are never closed, so the bound is soft under load).
 */
export class D1Engine {
  private readonly executors = new Map<string, DatabaseExecutor>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly dir: string,
    private readonly timeoutMs: number,
    private readonly log: Logger,
  ) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.sweeper = setInterval(() => this.closeIdle(D1_LIMITS.executorIdleMs), Math.min(D1_LIMITS.executorIdleMs, 10_000));
    this.sweeper.unref();
  }

  private executor(uuid: string): DatabaseExecutor {
    let e = this.executors.get(uuid);
    if (!e) {
      e = new DatabaseExecutor(databaseFile(this.dir, uuid), this.timeoutMs, this.log);
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

  async query(uuid: string, statements: PlannedStatement[]): Promise<StatementResult[]> {
    return (await this.executor(uuid).run({ op: "query", statements })).results!;
  }

  async stats(uuid: string): Promise<DatabaseStats> {
    return (await this.executor(uuid).run({ op: "stats" })).stats!;
  }

  /** Writes the database as SQL to `path`. */
  async dump(uuid: string, path: string, options: DumpOptions): Promise<void> {
    await this.executor(uuid).run({ op: "dump", path, options }, this.timeoutMs * 10);
  }

  /** Runs the SQL file at `path` in one transaction. */
  async importSql(uuid: string, path: string): Promise<ImportResult> {
    return (await this.executor(uuid).run({ op: "import", path }, this.timeoutMs * 10)).imported!;
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
