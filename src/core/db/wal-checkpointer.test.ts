import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "../logger.js";
import { eventually } from "../testing/eventually.js";
import { openDatabase, type Db } from "./sqlite.js";
import { WalCheckpointer } from "./wal-checkpointer.js";

const BLOB_TABLE = "CREATE TABLE t (id INTEGER PRIMARY KEY, bytes BLOB NOT NULL)";
const log = createLogger({ level: "silent" });

/** Commits `mib` MiB in 4 KiB rows, one transaction each, as request handlers do. */
function write(db: Db, mib: number): void {
  const insert = db.prepare("INSERT INTO t (bytes) VALUES (?)");
  for (let i = 0; i < mib * 256; i++) insert.run(Buffer.alloc(4096, i & 0xff));
}

const mainFileBytes = (db: Db) => statSync(db.name).size;

/** A fresh database adopted by `checkpointer`, removed after `body`. */
async function withAdopted(checkpointer: WalCheckpointer, body: (db: Db) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "edge-checkpoint-"));
  const db = openDatabase(join(dir, "area.sqlite"), [BLOB_TABLE]);
  try {
    assert.equal(db.pragma("wal_autocheckpoint", { simple: true }), 1000, "SQLite's default, which these tests rely on");
    checkpointer.adopt(db);
    assert.equal(db.pragma("wal_autocheckpoint", { simple: true }), 16_384);
    await body(db);
  } finally {
    await checkpointer.close();
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

test("an adopted connection does not checkpoint in its commits", () =>
  // The thread's first look is an hour away: whatever reaches the database file here, a commit put there.
  withAdopted(new WalCheckpointer(log, 3600_000), async (db) => {
    const before = mainFileBytes(db);
    // Well past SQLite's default of 1,000 pages, where the connection would have checkpointed inside a commit.
    write(db, 6);
    assert.ok(mainFileBytes(db) - before < 1024 * 1024, "no commit copied the WAL into the database file");
  }));

test("the thread copies a grown WAL into the database file", () =>
  withAdopted(new WalCheckpointer(log, 50), async (db) => {
    const before = mainFileBytes(db);
    write(db, 6);
    await eventually(() => mainFileBytes(db) - before > 5 * 1024 * 1024, "the thread to checkpoint the WAL");
    assert.equal((db.prepare("SELECT count(*) AS n FROM t").get() as { n: number }).n, 6 * 256);
  }));

test("after close, databases opened later keep SQLite's own checkpoints", async () => {
  const dir = mkdtempSync(join(tmpdir(), "edge-checkpoint-"));
  const checkpointer = new WalCheckpointer(log, 50);
  await checkpointer.close();
  const db = openDatabase(join(dir, "late.sqlite"), [BLOB_TABLE]);
  try {
    checkpointer.adopt(db);
    assert.equal(db.pragma("wal_autocheckpoint", { simple: true }), 1000);
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
