import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { openDatabase } from "../core/db/sqlite.js";
import { packLogs, unpackLogs } from "./sqlite-log-writer.js";
import { AI_GATEWAY_MIGRATIONS } from "./sqlite-migrations.js";
import { sqliteStores } from "./sqlite-store.js";
import { A, sampleLog, sampleSettings } from "./testing/sample-log.js";

describe("AI gateway log writer thread", () => {
  it("packs a batch's bodies into one buffer of their exact bytes (views into larger memory included) and unpacks them intact", () => {
    const pool = Buffer.from("xxxxREQUESTyyyyRESPONSEzzzz");
    const batch = [
      sampleLog(1, { request_body: pool.subarray(4, 11), response_body: pool.subarray(15, 23) }),
      sampleLog(2, { request_body: null, response_body: Buffer.from("") }),
      sampleLog(3, { request_body: Buffer.from("third"), response_body: null, metadata: { k: "v" } }),
    ];
    const { logs, bodies } = packLogs(batch);
    assert.equal(bodies!.byteLength, "REQUESTRESPONSEthird".length, "only the bodies' own bytes travel, not the memory they are views of");
    assert.deepEqual(
      logs.map((l) => [l.request_body, l.response_body]),
      [
        [7, 8],
        [null, 0],
        [5, null],
      ],
    );
    // As the thread gets it: a copy of the message, the buffer moved.
    const back = unpackLogs(structuredClone(logs), structuredClone(bodies, { transfer: [bodies!] }));
    assert.deepEqual(back, batch);

    const empty = [sampleLog(4, { request_body: Buffer.alloc(0), response_body: null })];
    const packed = packLogs(empty);
    assert.equal(packed.bodies, null, "no bytes, no buffer");
    assert.deepEqual(unpackLogs(packed.logs, packed.bodies), empty);
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
