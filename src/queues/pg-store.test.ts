import assert from "node:assert/strict";
import { test } from "node:test";
import { migrateArea } from "../core/db/pg-migrations.js";
import { Postgres } from "../core/db/postgres.js";
import { testPostgres } from "../core/testing/backends.js";
import { testDatabase } from "../core/testing/services.js";
import { QUEUES_PG_MIGRATIONS } from "./pg-migrations.js";
import { PgQueuesStore, QUEUES_AREA } from "./pg-store.js";
import { describeQueuesStore } from "./store.contract.js";

describeQueuesStore("PostgreSQL", async (t) => {
  const pg = await testPostgres(t, QUEUES_AREA, QUEUES_PG_MIGRATIONS);
  return pg && { store: new PgQueuesStore(pg), close() {} };
});

test("PostgreSQL: migration 3 counts the backlog of the queues that already have messages, and the counters survive a restart", async (t) => {
  const db = await testDatabase(t);
  if (!db) return;
  const node = async (migrations: typeof QUEUES_PG_MIGRATIONS) => {
    const pg = new Postgres({ url: db.url, poolSize: 2 });
    await migrateArea(pg, QUEUES_AREA, migrations);
    return pg;
  };
  const before = await node(QUEUES_PG_MIGRATIONS.slice(0, 2));
  for (const [id, name] of [
    ["q1", "old"],
    ["q2", "empty"],
  ])
    await before.execute("INSERT INTO queues.queues (id, account_id, name, created_on, modified_on) VALUES ($1, $2, $3, 0, 0)", [id, "a".repeat(32), name]);
  for (const [id, body] of [
    ["m1", "hello"],
    ["m2", "world!"],
  ])
    await before.execute("INSERT INTO queues.messages (id, queue_id, body, content_type, sent_at, visible_at) VALUES ($1, 'q1', $2, 'text', 0, 0)", [
      id,
      Buffer.from(body!),
    ]);
  await before.close();

  const upgraded = await node(QUEUES_PG_MIGRATIONS);
  const store = new PgQueuesStore(upgraded);
  assert.deepEqual(await store.backlog("q1"), { messages: 2, bytes: 11 });
  assert.deepEqual(await store.backlog("q2"), { messages: 0, bytes: 0 });
  await store.enqueue("q2", [{ body: Buffer.from("abc"), contentType: "text", delaySeconds: 0 }], 1000);
  await upgraded.close();

  const restarted = await node(QUEUES_PG_MIGRATIONS);
  t.after(() => restarted.close());
  const again = new PgQueuesStore(restarted);
  assert.deepEqual(await again.backlog("q1"), { messages: 2, bytes: 11 });
  assert.deepEqual(await again.backlog("q2"), { messages: 1, bytes: 3 });
  await assert.rejects(again.enqueue("q1", [{ body: Buffer.from("x"), contentType: "text", delaySeconds: 0 }], 11), /Storage Limit Exceeded/);
});
