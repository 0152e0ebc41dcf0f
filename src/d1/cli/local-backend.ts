import { closeSync, mkdirSync, openSync, writeSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { openDatabase, sqliteAddon, type Db } from "../../core/db/sqlite.js";
import { EdgeError, UserError } from "../../core/errors.js";
import { asRowsOfObjects } from "../databases.js";
import { D1_DIR, databaseFile } from "../engine/engine.js";
import { dumpDatabase, type DumpOptions } from "../engine/dump.js";
import { planQueries } from "../engine/plan.js";
import { configureConnection, RunFailure, runStatements } from "../engine/runner.js";
import { D1_MIGRATIONS } from "../sqlite-migrations.js";
import { SqliteD1Store } from "../sqlite-store.js";
import type { D1DatabaseRecord } from "../store.js";
import type { CliStatementResult, D1CliBackend } from "./backend.js";

/** The D1 registry of a state directory, opened as `edgecli serve` opens it (SQLite WAL keeps both processes safe). */
export function openLocalD1Store(stateDir: string): { store: SqliteD1Store; close(): void } {
  const db = openDatabase(join(stateDir, "db", "d1.sqlite"), D1_MIGRATIONS);
  return { store: new SqliteD1Store(db), close: () => db.close() };
}

/**
 * A database's file in the state directory, run in this process with the same planning, guard and transaction as
 * the platform's executor (no deadline: the CLI is the user's own process, which Ctrl-C stops).
 */
export class LocalD1Backend implements D1CliBackend {
  readonly where = "local";
  private readonly db: Db;

  constructor(stateDir: string, database: D1DatabaseRecord) {
    const dir = join(stateDir, D1_DIR);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.db = new Database(databaseFile(dir, database.uuid), { nativeBinding: sqliteAddon() });
    configureConnection(this.db);
  }

  async execute(sql: string): Promise<CliStatementResult[]> {
    try {
      return runStatements(this.db, planQueries([{ sql }])).map((r) => ({ results: asRowsOfObjects(r), success: true, meta: r.meta }));
    } catch (err) {
      if (err instanceof RunFailure) throw new UserError(err.kind === "sql" ? err.message : "The results are too large to print");
      if (err instanceof EdgeError) throw new UserError(err.message);
      throw err;
    }
  }

  async exportTo(file: string, options: DumpOptions): Promise<void> {
    const fd = openSync(file, "w");
    try {
      for (const line of dumpDatabase(this.db, options)) writeSync(fd, line + "\n");
    } finally {
      closeSync(fd);
    }
  }

  close(): void {
    this.db.close();
  }
}
