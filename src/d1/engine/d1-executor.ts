/**
 * The process that runs one D1 database's SQL (forked by executor.ts, with the database file as its argument).
 * SQLite runs synchronously and better-sqlite3 can neither interrupt a statement nor install a progress handler,
 * so a hostile query (an endless recursive CTE) can only be stopped by killing the process that runs it: the
 * platform does that at the request's deadline, and SQLite's journal undoes the transaction it had open.
 */
import { closeSync, openSync, readFileSync, renameSync, writeSync } from "node:fs";
import Database from "better-sqlite3";
import { sqliteAddon } from "../../core/db/sqlite.js";
import { EdgeError } from "../../core/errors.js";
import { dumpDatabase } from "./dump.js";
import { planQueries } from "./plan.js";
import type { ExecutorAnswer, ExecutorJob } from "./protocol.js";
import { asRunFailure, configureConnection, databaseSize, RunFailure, runStatements } from "./runner.js";

const file = process.argv[2];
if (!file || !process.send) {
  process.stderr.write("d1-executor: run by the platform only\n");
  process.exit(2);
}
const db = new Database(file, { nativeBinding: sqliteAddon() });
configureConnection(db);
// SQLite's heap limits (hard_heap_limit) do nothing here: better-sqlite3 is built with SQLITE_DEFAULT_MEMSTATUS=0,
// which turns their accounting off. The bound is the process's data segment (RLIMIT_DATA, set by executor.ts): past
// it SQLite's allocations (a TEMP table, a sort, a randomblob(1e9)) fail with "out of memory" and the query with them.

function answer(job: ExecutorJob): ExecutorAnswer {
  switch (job.op) {
    case "query":
      return { ok: true, results: runStatements(db, job.statements) };
    case "stats": {
      const tables = db.prepare("SELECT count(*) AS n FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").get() as { n: number };
      return { ok: true, stats: { size: databaseSize(db), tables: tables.n } };
    }
    case "dump": {
      const tmp = `${job.path}.tmp`;
      const fd = openSync(tmp, "w", 0o600);
      try {
        let buffered = "";
        for (const line of dumpDatabase(db, job.options)) {
          buffered += line + "\n";
          if (buffered.length >= 1 << 20) {
            writeSync(fd, buffered);
            buffered = "";
          }
        }
        writeSync(fd, buffered);
      } finally {
        closeSync(fd);
      }
      renameSync(tmp, job.path);
      return { ok: true };
    }
    case "import": {
      const started = performance.now();
      const statements = planQueries([{ sql: readFileSync(job.path, "utf8") }]);
      const results = runStatements(db, statements);
      return {
        ok: true,
        imported: {
          statements: results.length,
          rowsWritten: results.reduce((n, r) => n + r.meta.rows_written, 0),
          size: databaseSize(db),
          duration: performance.now() - started,
        },
      };
    }
  }
}

process.on("message", (msg: { id: number; job: ExecutorJob }) => {
  let reply: ExecutorAnswer;
  try {
    reply = answer(msg.job);
  } catch (err) {
    const failure = err instanceof EdgeError ? err : asRunFailure(err);
    if (failure instanceof RunFailure) reply = { ok: false, kind: failure.kind, message: failure.message };
    else if (failure instanceof EdgeError)
      reply = { ok: false, kind: "refusal", status: failure.status, code: failure.errors[0]!.code, message: failure.message };
    else throw err;
  }
  process.send!({ id: msg.id, reply });
});
// Ready: the platform starts a request's deadline only now, so a slow start (a busy machine) is not the query's time.
process.send!({ ready: true });
// The platform going away (its IPC channel closing) ends the executor too.
process.on("disconnect", () => {
  db.close();
  process.exit(0);
});
