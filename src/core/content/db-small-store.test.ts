import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { openDatabase, type Db } from "../db/sqlite.js";
import { DbSmallContentStore, SMALL_BODY_BYTES } from "./db-small-store.js";
import { FileContentStore } from "./file-store.js";
import { describeContentStore } from "./store.contract.js";

const TABLE_SQL = "CREATE TABLE small (id TEXT PRIMARY KEY, created INTEGER NOT NULL, bytes BLOB NOT NULL)";

function open(): { store: DbSmallContentStore; db: Db; filesDir: string; close(): void } {
  const dir = mkdtempSync(join(tmpdir(), "edge-small-content-"));
  const db = openDatabase(join(dir, "area.sqlite"), [TABLE_SQL]);
  const filesDir = join(dir, "files");
  return {
    store: new DbSmallContentStore(db, "small", new FileContentStore(filesDir)),
    db,
    filesDir,
    close() {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

describeContentStore("small bodies in SQLite, larger in files", async () => open());

const files = (dir: string) =>
  readdirSync(dir)
    .filter((d) => d !== "tmp")
    .flatMap((d) => readdirSync(join(dir, d)));
const rows = (db: Db) => (db.prepare("SELECT count(*) AS n FROM small").get() as { n: number }).n;
const md5 = (b: Buffer) => createHash("md5").update(b).digest("hex");

test("bodies up to the limit go to the table, larger ones to files, whether buffered or streamed in any chunking", async () => {
  const s = open();
  try {
    const atLimit = Buffer.alloc(SMALL_BODY_BYTES, 3);
    const overLimit = Buffer.alloc(SMALL_BODY_BYTES + 1, 4);
    const ids = [
      await s.store.put(atLimit),
      await s.store.put(Readable.from([atLimit.subarray(0, 10), atLimit.subarray(10)])),
      await s.store.put(Readable.from([])),
    ];
    assert.equal(rows(s.db), 3);
    assert.deepEqual(files(s.filesDir), []);
    // Over the limit: in one chunk, split exactly at the limit, and in many small chunks.
    const large = [
      await s.store.put(overLimit),
      await s.store.put(Readable.from([overLimit.subarray(0, SMALL_BODY_BYTES), overLimit.subarray(SMALL_BODY_BYTES)])),
      await s.store.put(Readable.from(Array.from({ length: 65 }, (_, i) => overLimit.subarray(i * 1024, (i + 1) * 1024 + (i === 64 ? 1 : 0))))),
    ];
    assert.equal(rows(s.db), 3);
    assert.equal(files(s.filesDir).length, 3);
    for (const put of large) {
      assert.deepEqual({ size: put.size, md5: put.md5 }, { size: overLimit.length, md5: md5(overLimit) });
      assert.ok((await s.store.readAll(put.id)).equals(overLimit));
    }
    assert.ok((await s.store.readAll(ids[1].id)).equals(atLimit));
    assert.equal(ids[2].size, 0);
    for (const put of [...ids, ...large]) await s.store.delete(put.id);
    assert.equal(rows(s.db), 0);
    assert.deepEqual(files(s.filesDir), []);
  } finally {
    s.close();
  }
});

test("a stream that fails after spilling to a file leaves nothing in either place", async () => {
  const s = open();
  try {
    async function* failsLate() {
      yield Buffer.alloc(SMALL_BODY_BYTES, 1);
      yield Buffer.alloc(1024, 2);
      throw new Error("client went away");
    }
    await assert.rejects(s.store.put(Readable.from(failsLate())), /client went away/);
    assert.equal(rows(s.db), 0);
    assert.deepEqual(files(s.filesDir), []);
    assert.deepEqual(readdirSync(join(s.filesDir, "tmp")), []);
  } finally {
    s.close();
  }
});

test("deleteSync and ranges work on small bodies", async () => {
  const s = open();
  try {
    const put = await s.store.put(Buffer.from("0123456789"));
    const chunks: Buffer[] = [];
    for await (const c of s.store.read(put.id, { offset: 3, length: 4 })) chunks.push(c as Buffer);
    assert.equal(Buffer.concat(chunks).toString(), "3456");
    s.store.deleteSync(put.id);
    assert.equal(rows(s.db), 0);
    assert.throws(() => s.store.deleteSync("../x"), /invalid content id/);
  } finally {
    s.close();
  }
});

test("readSmall hands over a small body whole and says undefined for one kept in a file", async () => {
  const s = open();
  try {
    const small = await s.store.put(Buffer.from("in a row"));
    const large = await s.store.put(Buffer.alloc(SMALL_BODY_BYTES + 1, 5));
    assert.equal(s.store.readSmall(small.id)?.toString(), "in a row");
    assert.equal(s.store.readSmall(large.id), undefined);
    await s.store.delete(small.id);
    assert.equal(s.store.readSmall(small.id), undefined);
    assert.throws(() => s.store.readSmall("../x"), /invalid content id/);
  } finally {
    s.close();
  }
});
