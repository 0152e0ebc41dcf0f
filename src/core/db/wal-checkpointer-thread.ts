// The thread of wal-checkpointer.ts: one connection per database, a PASSIVE checkpoint for each whose WAL file
// changed since the last look.
import { statSync } from "node:fs";
import { parentPort, workerData } from "node:worker_threads";
import Database from "better-sqlite3";
import { sqliteAddon } from "./sqlite.js";

const port = parentPort!;
const { intervalMs } = workerData as { intervalMs: number };
const watched = new Map<string, { db: Database.Database; seen: number }>();

/** When the WAL was last written, by its size and modification time (0 when there is none). */
function walStamp(file: string): number {
  try {
    const st = statSync(`${file}-wal`);
    return st.mtimeMs * 1e3 + st.size;
  } catch {
    return 0;
  }
}

setInterval(() => {
  for (const [file, w] of watched) {
    const stamp = walStamp(file);
    if (stamp === 0 || stamp === w.seen) continue;
    try {
      w.db.pragma("wal_checkpoint(PASSIVE)");
      w.seen = walStamp(file);
    } catch (err) {
      port.postMessage({ file, error: (err as Error).message });
    }
  }
}, intervalMs);

// The thread is ended with Worker.terminate() (wal-checkpointer.ts); its connections close with it.
port.on("message", (m: { op: "add"; file: string }) => {
  if (watched.has(m.file)) return;
  // No migrations and no pragmas that write: the platform's connection owns the schema. busy_timeout 0: a
  // checkpoint that would have to wait is simply tried again at the next tick.
  const db = new Database(m.file, { nativeBinding: sqliteAddon() });
  db.pragma("busy_timeout = 0");
  watched.set(m.file, { db, seen: 0 });
});
