import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { openDatabase } from "../../core/db/sqlite.js";
import { LogWriterThread, packBatch, PIECE_BYTES, SHARED_BATCH_BYTES, unpackBatch, type PackedBatch, type SharedBatch } from "./sqlite-log-writer.js";
import { AI_GATEWAY_MIGRATIONS } from "../sqlite-migrations.js";
import { sqliteStores } from "../sqlite-store.js";
import { A, sampleDraft, sampleLog, sampleSettings, shippedPrices } from "../testing/sample-log.js";

describe("AI gateway log writer thread", () => {
  it("packs a batch's bodies into memory of its own, exactly their bytes (views into larger memory included), and unpacks them intact", () => {
    const pool = Buffer.from("xxxxREQUESTyyyyRESPONSEzzzz");
    const batch = [
      sampleLog(1, { request_body: pool.subarray(4, 11), response_body: pool.subarray(15, 23) }),
      sampleLog(2, { request_body: null, response_body: Buffer.from("") }),
      sampleLog(3, { request_body: Buffer.from("third"), response_body: null, metadata: { k: "v" } }),
    ];
    const packed = packBatch(batch) as PackedBatch;
    const { bodies, pieces } = packed.layout;
    assert.equal(bodies, "REQUESTRESPONSEthird".length, "only the bodies' own bytes travel, not the memory they are views of");
    // The bodies, the items' text and room for its commas, nothing more.
    assert.ok(packed.bytes.byteLength - pieces.at(-1)! <= batch.length, `${packed.bytes.byteLength} bytes for ${pieces.at(-1)}`);
    const items = JSON.parse(`[${Buffer.from(packed.bytes).toString("utf8", bodies, pieces.at(-1))}]`) as {
      request_body: number | null;
      response_body: number | null;
    }[];
    assert.deepEqual(
      items.map((l) => [l.request_body, l.response_body]),
      [
        [7, 8],
        [null, 0],
        [5, null],
      ],
    );
    // As the thread gets it: a copy of the message, the buffer moved.
    const back = unpackBatch(structuredClone(packed, { transfer: [packed.bytes] }));
    assert.deepEqual(back, batch);
    assert.equal(packed.bytes.byteLength, 0, "moved, not copied");
  });

  it("cuts a batch's text into pieces of about PIECE_BYTES, so that no string of a whole batch is made on either side", () => {
    const batch = Array.from({ length: 600 }, (_, i) => sampleLog(i, { request_body: Buffer.from(`r${i}`), metadata: { i: String(i) } }));
    const texts = batch.map((l) => Buffer.byteLength(JSON.stringify(l)));
    const packed = packBatch(batch) as PackedBatch;
    const { bodies, pieces } = packed.layout;
    assert.ok(pieces.length >= Math.floor(texts.reduce((a, b) => a + b) / PIECE_BYTES), `${pieces.length} pieces`);
    let from = bodies;
    for (const end of pieces) {
      assert.ok(end - from < PIECE_BYTES + Math.max(...texts) + 1, `a piece of ${end - from} bytes`);
      from = end;
    }
    assert.deepEqual(unpackBatch(packed), batch);
  });

  it("writes a batch into the shared buffer, bodies first, and reads it back from there; one that does not fit gets memory of its own", () => {
    const into = Buffer.from(new SharedArrayBuffer(64));
    const batch = [
      sampleLog(1, { request_body: Buffer.from("REQ"), response_body: Buffer.from("RESPONSE") }),
      sampleLog(2, { request_body: null, response_body: Buffer.alloc(0) }),
    ];
    const big = Buffer.from(new SharedArrayBuffer(4096));
    const packed = packBatch(batch, big) as SharedBatch;
    assert.equal(packed.shared.bodies, "REQRESPONSE".length);
    assert.equal(big.toString("latin1", 0, packed.shared.bodies), "REQRESPONSE");
    assert.deepEqual(unpackBatch(structuredClone(packed), big.buffer as SharedArrayBuffer), batch);
    // The items' text alone is larger than 64 bytes; and a body as large as the buffer.
    const own = packBatch(batch, into);
    assert.ok("bytes" in own);
    assert.deepEqual(unpackBatch(own), batch);
    assert.ok("bytes" in packBatch([sampleLog(3, { response_body: Buffer.alloc(64) })], into));
    // Text that is not Latin-1 is counted in UTF-8 bytes, not characters: the item's text has room in characters
    // (with the request body's byte), not in bytes (each euro sign is 3).
    const euros = [sampleLog(4, { metadata: { k: "€".repeat(20) } })];
    const wire = JSON.stringify({ ...euros[0], request_body: 1, response_body: null });
    assert.ok("bytes" in packBatch(euros, Buffer.from(new SharedArrayBuffer(1 + wire.length + 20))));
    assert.ok("shared" in packBatch(euros, Buffer.from(new SharedArrayBuffer(1 + Buffer.byteLength(wire) + 1))));
    const fits = packBatch(euros, big);
    assert.ok("shared" in fits);
    assert.equal(unpackBatch<ReturnType<typeof sampleLog>>(fits, big.buffer as SharedArrayBuffer)[0].metadata?.k, "€".repeat(20));
  });

  it("writes batches sent in the shared buffer, beside it (one in it already; one too large for it), and in it again, intact", async () => {
    const dir = mkdtempSync(join(tmpdir(), "aig-log-thread-"));
    try {
      const db = openDatabase(join(dir, "t.sqlite"), AI_GATEWAY_MIGRATIONS);
      const thread = new LogWriterThread(db, shippedPrices());
      const body = (tag: string, n: number) => Buffer.alloc(n, tag);
      const batch = (from: number, tag: string, n = 100) =>
        Array.from({ length: 20 }, (_, i) => sampleLog(from + i, { request_body: body(tag, n), response_body: body(tag.toUpperCase(), n + 1) }));
      // Sent without waiting: the first takes the shared buffer, the second is packed beside it. Then one larger than
      // the buffer, and one that reuses the buffer the first was in.
      await Promise.all([thread.append(batch(0, "a")), thread.append(batch(100, "b"))]);
      await thread.append(batch(200, "c", SHARED_BATCH_BYTES / 30));
      await thread.append(batch(300, "d"));
      await thread.close();
      const rows = db.prepare("SELECT id, request_body, response_body FROM logs ORDER BY id").all() as {
        id: string;
        request_body: Buffer;
        response_body: Buffer;
      }[];
      assert.equal(rows.length, 80);
      for (const r of rows) {
        const n = Number(r.id.slice(1));
        const [tag, size] = n < 100 ? ["a", 100] : n < 200 ? ["b", 100] : n < 300 ? ["c", SHARED_BATCH_BYTES / 30] : ["d", 100];
        assert.ok(r.request_body.equals(body(tag, size)), `request body of ${r.id}`);
        assert.ok(r.response_body.equals(body(tag.toUpperCase(), size + 1)), `response body of ${r.id}`);
      }
      db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("writes large batches on its own connection; reads here see them once written, and close() writes what was sent first", async () => {
    const dir = mkdtempSync(join(tmpdir(), "aig-log-thread-"));
    try {
      const file = join(dir, "t.sqlite");
      const db = openDatabase(file, AI_GATEWAY_MIGRATIONS);
      const { logs, close } = sqliteStores(db, { writerThread: true });
      // 40 logs: a batch large enough for the thread.
      await logs.append(Array.from({ length: 40 }, (_, i) => sampleLog(i, { response_body: Buffer.from(`{"n":${i}}`) })));
      assert.deepEqual(await logs.body(A, "g", "L00000039", "response"), { body: Buffer.from('{"n":39}'), contentType: null });
      // Sent without waiting, then closed at once: the thread writes all of it before it ends.
      const sent = Array.from({ length: 20 }, (_, b) => logs.append(Array.from({ length: 50 }, (_, i) => sampleLog(100 + b * 50 + i))));
      await close();
      await Promise.all(sent);
      db.close();
      const again = openDatabase(file, AI_GATEWAY_MIGRATIONS);
      assert.equal((again.prepare("SELECT count(*) AS n FROM logs").get() as { n: number }).n, 40 + 20 * 50);
      again.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("checkpoints as the store's connection does: a WAL taken over by the checkpoint thread is not copied back by the thread's commits", async () => {
    const dir = mkdtempSync(join(tmpdir(), "aig-log-thread-"));
    try {
      const db = openDatabase(join(dir, "t.sqlite"), AI_GATEWAY_MIGRATIONS);
      // As WalCheckpointer.adopt leaves a connection: checkpointing by itself only past its backstop.
      db.pragma("wal_autocheckpoint = 16384");
      const { logs, close } = sqliteStores(db, { writerThread: true });
      // ~2,000 pages of 4 KiB, twice SQLite's default autocheckpoint, in batches large enough for the thread.
      const body = Buffer.alloc(4000, "x");
      for (let b = 0; b < 20; b++) await logs.append(Array.from({ length: 100 }, (_, i) => sampleLog(b * 100 + i, { response_body: body })));
      // No checkpoint ran: every frame written is still in the WAL (a checkpoint at 1,000 pages would have let the
      // next commit start the WAL over, leaving a few hundred frames in it).
      const [{ log, checkpointed }] = db.pragma("wal_checkpoint(PASSIVE)") as { log: number; checkpointed: number }[];
      assert.ok(log > 2000, `frames in the WAL: ${log}`);
      assert.equal(checkpointed, log);
      await close();
      db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("builds drafts into logs on the thread: usage read from the JSON answer, priced with the table it was sent, bodies kept or not", async () => {
    const dir = mkdtempSync(join(tmpdir(), "aig-log-thread-"));
    try {
      const db = openDatabase(join(dir, "t.sqlite"), AI_GATEWAY_MIGRATIONS);
      const { logs, close } = sqliteStores(db, { writerThread: true });
      const answer = (i: number) => Buffer.from(JSON.stringify({ model: "gpt-4o-mini", usage: { prompt_tokens: 1000 * i, completion_tokens: 10 } }));
      // 40 drafts: a batch large enough for the thread; the last one asked not to keep its bodies.
      const drafts = Array.from({ length: 40 }, (_, i) => sampleDraft(i, { response_body: answer(i), keep_bodies: i < 39 }));
      await logs.appendDrafts(drafts);
      const log = await logs.get(A, "g", "L00000002");
      assert.equal(log?.model, "gpt-4o-mini");
      assert.equal(log?.tokens_in, 2000);
      assert.equal(log?.tokens_out, 10);
      assert.equal(log?.cost, (2000 * 0.15 + 10 * 0.6) / 1e6, "priced on the thread with the shipped table's gpt-4o-mini");
      assert.equal(log?.created_at, new Date(1e12 + 2000).toISOString());
      assert.deepEqual(await logs.body(A, "g", "L00000002", "response"), { body: answer(2), contentType: null });
      assert.equal((await logs.body(A, "g", "L00000039", "response"))?.body, null, "read for usage, not kept");
      assert.equal((await logs.get(A, "g", "L00000039"))?.tokens_in, 39_000);
      await close();
      db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("keeps a gateway's log limit exact when its small unlimited batches were written here in between", async () => {
    const dir = mkdtempSync(join(tmpdir(), "aig-log-thread-"));
    try {
      const db = openDatabase(join(dir, "t.sqlite"), AI_GATEWAY_MIGRATIONS);
      const { gateways, logs, close } = sqliteStores(db, { writerThread: true });
      const limited = (i: number, limit: number) => sampleLog(i, { limit, strategy: "STOP_INSERTING" });
      await gateways.create(A, "g", sampleSettings({ log_management: 5, log_management_strategy: "STOP_INSERTING" }));
      assert.deepEqual(await logs.append([1, 2, 3].map((i) => limited(i, 5))), [{ account_id: A, gateway_id: "g", count: 3 }]);
      await gateways.update(A, "g", sampleSettings());
      assert.deepEqual(await logs.append([4, 5, 6, 7].map((i) => sampleLog(i))), [], "written here: no limit, a small batch");
      await gateways.update(A, "g", sampleSettings({ log_management: 10, log_management_strategy: "STOP_INSERTING" }));
      assert.deepEqual(await logs.append([8, 9, 10, 11, 12].map((i) => limited(i, 10))), [{ account_id: A, gateway_id: "g", count: 10 }]);
      assert.equal((db.prepare("SELECT count(*) AS n FROM logs").get() as { n: number }).n, 10, "the limit holds: 3 + 4 + 3 of 5");
      await close();
      db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
