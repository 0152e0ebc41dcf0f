// The rollups' read thread (started by sqlite-reader.ts): runs a query's grouped SELECT on a read-only connection of
// its own, so the SQLite work of a query (a 30-day read by minute groups up to half a million rows) never runs on
// the platform's event loop. WAL mode lets it read while the main thread's connection writes.
import Database from "better-sqlite3";
import { parentPort, workerData } from "node:worker_threads";
import { sqliteAddon } from "../../core/db/sqlite.js";
import type { ReadReply, ReadRequest } from "./sqlite-reader.js";

const port = parentPort!;
let db: Database.Database | undefined;
port.on("message", ({ id, sql, params }: ReadRequest) => {
  let reply: ReadReply;
  try {
    // Opened with the first read, so a file that cannot be opened is that read's error, not the thread's.
    db ??= new Database((workerData as { file: string }).file, { readonly: true, fileMustExist: true, nativeBinding: sqliteAddon() });
    db.pragma("busy_timeout = 5000");
    reply = { id, rows: db.prepare(sql).all(...params) as Record<string, unknown>[] };
  } catch (err) {
    reply = { id, error: err instanceof Error ? err.message : String(err) };
  }
  port.postMessage(reply);
});
