import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { setImmediate as nextTurn, setTimeout as sleep } from "node:timers/promises";
import { openDatabase } from "../../core/db/sqlite.js";
import { createLogger } from "../../core/logger.js";
import { AI_GATEWAY_MIGRATIONS } from "../sqlite-migrations.js";
import { sqliteStores } from "../sqlite-store.js";
import { A, sampleDraft, sampleSettings } from "../testing/sample-log.js";
import { LogCounts } from "./counts.js";
import { FLUSH_AFTER_MS, LIMITED_FLUSH_AFTER_MS, LogQueue } from "./queue.js";

describe("AI gateway log queue", () => {
  it("log queue: drafts wait for the queue's timer (or a flush) and are written together, built into logs with usage and cost (real SQLite file)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "aig-queue-"));
    try {
      const db = openDatabase(join(dir, "t.sqlite"), AI_GATEWAY_MIGRATIONS);
      const { logs } = sqliteStores(db);
      const q = new LogQueue(logs, new LogCounts(logs), createLogger({ level: "silent" }));
      const stored = () => logs.count(A, "g");
      const answer = Buffer.from(JSON.stringify({ model: "gpt-4o-mini", usage: { prompt_tokens: 1000, completion_tokens: 2000 } }));

      q.push(sampleDraft(1, { response_body: answer }));
      assert.equal(await stored(), 0, "nothing is written in the turn that answered");
      await q.flush();
      assert.equal(await stored(), 1, "a flush (the logs API, stop) writes what waits");
      const log = await logs.get(A, "g", "L00000001");
      assert.deepEqual([log?.model, log?.tokens_in, log?.tokens_out, log?.cost], ["gpt-4o-mini", 1000, 2000, (1000 * 0.15 + 2000 * 0.6) / 1e6]);

      q.push(sampleDraft(2));
      q.push(sampleDraft(3));
      await nextTurn();
      assert.equal(await stored(), 1, "drafts wait for the queue's timer, not just for the next turn");
      for (let i = 0; i < 1000 && (await stored()) < 3; i++) await sleep(5);
      assert.equal(await stored(), 3, "the timer wrote both without being asked");
      db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("counts the logs of a batch being written as pending until the store has them", async () => {
    const dir = mkdtempSync(join(tmpdir(), "aig-queue-pending-"));
    try {
      const db = openDatabase(join(dir, "t.sqlite"), AI_GATEWAY_MIGRATIONS);
      const { logs } = sqliteStores(db);
      // The store's write is held until `release`: the batch is out of the queue's waiting list, not yet stored.
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      const slow: typeof logs = Object.create(logs);
      slow.appendDrafts = async (batch) => (await held, logs.appendDrafts(batch));
      const q = new LogQueue(slow, new LogCounts(slow), createLogger({ level: "silent" }));
      q.push(sampleDraft(1));
      q.push(sampleDraft(2));
      const flushed = q.flush();
      await nextTurn();
      assert.equal(q.pending, 2, "taken for writing, not written: still pending");
      release();
      await flushed;
      assert.equal(q.pending, 0);
      assert.equal(await logs.count(A, "g"), 2);
      db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a batch waits FLUSH_AFTER_MS for company, LIMITED_FLUSH_AFTER_MS once a log of a gateway with a limit is in it", async (t) => {
    const dir = mkdtempSync(join(tmpdir(), "aig-queue-timer-"));
    t.mock.timers.enable({ apis: ["setTimeout"] });
    try {
      const db = openDatabase(join(dir, "t.sqlite"), AI_GATEWAY_MIGRATIONS);
      const { logs } = sqliteStores(db);
      const q = new LogQueue(logs, new LogCounts(logs), createLogger({ level: "silent" }));
      /** Lets the queue's promise chain and the store's write turn run (the clock of setTimeout stands still). */
      const settle = async () => {
        for (let i = 0; i < 20; i++) await nextTurn();
      };
      assert.ok(LIMITED_FLUSH_AFTER_MS < FLUSH_AFTER_MS);

      q.push(sampleDraft(1));
      t.mock.timers.tick(LIMITED_FLUSH_AFTER_MS);
      await settle();
      assert.equal(q.pending, 1, "a log of a gateway without a limit waits longer for company");
      t.mock.timers.tick(FLUSH_AFTER_MS - LIMITED_FLUSH_AFTER_MS);
      await settle();
      assert.equal(q.pending, 0);
      assert.equal(await logs.count(A, "g"), 1, "written when its wait was over");

      q.push(sampleDraft(2));
      q.push(sampleDraft(3, { limit: 100, strategy: "STOP_INSERTING" }));
      t.mock.timers.tick(LIMITED_FLUSH_AFTER_MS);
      await settle();
      assert.equal(q.pending, 0, "a log with a limit brings the batch forward, with what waited before it");
      assert.equal(await logs.count(A, "g"), 3);
      await q.close();
      db.close();
    } finally {
      t.mock.timers.reset();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("knows a STOP_INSERTING gateway is full from its counts, asking the store only the first time and after a forget", async () => {
    const dir = mkdtempSync(join(tmpdir(), "aig-counts-"));
    try {
      const db = openDatabase(join(dir, "t.sqlite"), AI_GATEWAY_MIGRATIONS);
      const { gateways, logs } = sqliteStores(db);
      const counts = new LogCounts(logs);
      const q = new LogQueue(logs, counts, createLogger({ level: "silent" }));
      const g = await gateways.create(A, "g", sampleSettings({ log_management: 10_000, log_management_strategy: "STOP_INSERTING" }));
      const first = counts.isFull(g);
      assert.ok(first instanceof Promise, "not known yet: the store is asked");
      assert.equal(await first, false);
      for (let i = 0; i < 10_000; i++) q.push(sampleDraft(i, { limit: 10_000, strategy: "STOP_INSERTING" }));
      await q.flush();
      assert.equal(counts.isFull(g), true, "known from the batch's answer, without a promise");
      assert.equal(counts.isFull({ ...g, log_management_strategy: "DELETE_OLDEST" }), false, "DELETE_OLDEST is never full");
      assert.equal(counts.isFull({ ...g, log_management: null }), false);
      await logs.delete(A, "g", { filter: { conditions: [] }, order: { by: "created_at", direction: "asc" }, limit: 1 });
      counts.forget(A, "g");
      const again = counts.isFull(g);
      assert.ok(again instanceof Promise);
      assert.equal(await again, false);
      assert.equal(counts.isFull(g), false);
      db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
