import assert from "node:assert/strict";
import { test } from "node:test";
import { createLogger } from "../core/logger.js";
import { sqliteStoreFactory } from "../core/testing/contract.js";
import { RetentionSweep } from "./retention.js";
import { QUEUES_MIGRATIONS } from "./sqlite-migrations.js";
import { SqliteQueuesStore } from "./sqlite-store.js";
import type { QueuesStore } from "./store.js";

const A = "a".repeat(32);

test("the retention sweep removes every expired message in turns of at most its batch, and keeps the others", async (t) => {
  const made = (await sqliteStoreFactory(QUEUES_MIGRATIONS, (db) => new SqliteQueuesStore(db))())!;
  t.after(() => made.close());
  // Counts the store's calls, so the test sees the turns (each a transaction of at most `batch` deletions).
  const turns: number[] = [];
  const store: QueuesStore = Object.create(made.store) as QueuesStore;
  store.sweepExpired = async (nowMs, max) => {
    const n = await made.store.sweepExpired(nowMs, max);
    turns.push(n);
    return n;
  };
  const short = (await store.createQueue(A, "short", { message_retention_period: 60 })).queue_id;
  const long = (await store.createQueue(A, "long")).queue_id;
  const text = (s: string) => ({ body: Buffer.from(s), contentType: "text" as const, delaySeconds: 0 });
  await store.enqueue(
    short,
    Array.from({ length: 25 }, (_, i) => text(`m${i}`)),
    1 << 30,
  );
  await store.enqueue(long, [text("kept")], 1 << 30);

  let clock = Date.now();
  const sweep = new RetentionSweep(store, createLogger({ level: "silent" }), { intervalMs: 60_000, batch: 10 }, () => clock);
  assert.equal(await sweep.sweepNow(), 0, "nothing has expired yet");
  clock += 61_000;
  assert.equal(await sweep.sweepNow(), 25);
  assert.deepEqual(turns, [0, 10, 10, 5]);
  assert.deepEqual(await store.backlog(short), { messages: 0, bytes: 0 });
  assert.deepEqual(await store.backlog(long), { messages: 1, bytes: 4 });
  await sweep.stop();
});
