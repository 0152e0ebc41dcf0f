import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { sqliteStoreFactory } from "../core/testing/contract.js";
import { openDatabase } from "../core/db/sqlite.js";
import { QUEUES_MIGRATIONS } from "./sqlite-migrations.js";
import { SqliteQueuesStore } from "./sqlite-store.js";
import { describeQueuesStore } from "./store.contract.js";

describeQueuesStore(
  "SQLite",
  sqliteStoreFactory(QUEUES_MIGRATIONS, (db) => new SqliteQueuesStore(db)),
);

test("SQLite: migration 3 counts the backlog of the queues that already have messages, and the counters survive a restart", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "queues-backlog-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, "queues.sqlite");
  const before = openDatabase(file, QUEUES_MIGRATIONS.slice(0, 2));
  const addQueue = before.prepare("INSERT INTO queues (id, account_id, name, created_on, modified_on) VALUES (?, ?, ?, 0, 0)");
  const addMessage = before.prepare("INSERT INTO messages (id, queue_id, body, content_type, sent_at, visible_at) VALUES (?, ?, ?, 'text', 0, 0)");
  addQueue.run("q1", "a".repeat(32), "old");
  addQueue.run("q2", "a".repeat(32), "empty");
  addMessage.run("m1", "q1", Buffer.from("hello"));
  addMessage.run("m2", "q1", Buffer.from("world!"));
  before.close();

  const upgraded = openDatabase(file, QUEUES_MIGRATIONS);
  const store = new SqliteQueuesStore(upgraded);
  assert.deepEqual(await store.backlog("q1"), { messages: 2, bytes: 11 });
  assert.deepEqual(await store.backlog("q2"), { messages: 0, bytes: 0 });
  await store.enqueue("q2", [{ body: Buffer.from("abc"), contentType: "text", delaySeconds: 0 }], 1000);
  upgraded.close();

  const restarted = new SqliteQueuesStore(openDatabase(file, QUEUES_MIGRATIONS));
  assert.deepEqual(await restarted.backlog("q1"), { messages: 2, bytes: 11 });
  assert.deepEqual(await restarted.backlog("q2"), { messages: 1, bytes: 3 });
  await assert.rejects(restarted.enqueue("q1", [{ body: Buffer.from("x"), contentType: "text", delaySeconds: 0 }], 11), /Storage Limit Exceeded/);
});
