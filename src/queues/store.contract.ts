import assert from "node:assert/strict";
import { storeContract } from "../core/testing/contract.js";
import { QueuesCodes } from "./errors.js";
import type { ConsumerInput, NewMessage, QueuesStore } from "./store.js";

const A = "a".repeat(32);
const B = "b".repeat(32);

/** A cap no case reaches, for the cases about something else. */
const ROOMY = 1 << 30;

const code = (expected: number) => (e: unknown) => (e as { errors: { code: number }[] }).errors[0]!.code === expected;
const msg = (text: string, delaySeconds = 0): NewMessage => ({ body: Buffer.from(text), contentType: "text", delaySeconds });
const worker = (script: string, dlq?: string): ConsumerInput => ({
  type: "worker",
  script_name: script,
  settings: { batch_size: 10, max_retries: 3, max_wait_time_ms: 1000, retry_delay: 0 },
  ...(dlq ? { dead_letter_queue: dlq } : {}),
});

/** What every QueuesStore does. */
export const describeQueuesStore = storeContract<QueuesStore>("QueuesStore", (it) => {
  it("queues are created, listed, read, renamed and deleted in their account only", async (store) => {
    const q = await store.createQueue(A, "orders");
    assert.match(q.queue_id, /^[0-9a-f]{32}$/);
    assert.equal(q.queue_name, "orders");
    assert.deepEqual(await store.getQueue(A, q.queue_id), q);
    assert.equal(await store.getQueue(B, q.queue_id), undefined);
    assert.deepEqual(await store.getQueueByName(A, "orders"), q);
    assert.equal(await store.getQueueByName(B, "orders"), undefined);
    assert.deepEqual(await store.listQueues(A), { queues: [q], total: 1 });
    assert.deepEqual(await store.listQueues(B), { queues: [], total: 0 });
    await assert.rejects(store.createQueue(A, "orders"), code(QueuesCodes.nameTaken));
    await store.createQueue(B, "orders");
    for (const bad of ["", "-x", "x-", "Upper", "has space", "x".repeat(64), "__proto__", "a/b"])
      await assert.rejects(store.createQueue(A, bad), code(QueuesCodes.badRequest), bad);
    await store.createQueue(A, "b2");
    const page = await store.listQueues(A, { offset: 1, limit: 1 });
    assert.deepEqual([page.queues.map((x) => x.queue_name), page.total], [["b2"], 2]);
    assert.deepEqual(
      (await store.listQueues(A, { names: ["b2"] })).queues.map((x) => x.queue_name),
      ["b2"],
    );
    assert.deepEqual((await store.listQueues(A, { names: ["b2", "orders", "nope"] })).queues.map((x) => x.queue_name).sort(), ["b2", "orders"]);
    assert.equal((await store.listQueues(A, { names: [] })).total, 0);
    await assert.rejects(store.updateQueue(B, q.queue_id, { name: "x" }), code(QueuesCodes.queueNotFound));
    await assert.rejects(store.updateQueue(A, q.queue_id, { name: "b2" }), code(QueuesCodes.nameTaken));
    assert.equal((await store.updateQueue(A, q.queue_id, { name: "orders-2" })).queue_name, "orders-2");
    await assert.rejects(store.deleteQueue(B, q.queue_id), code(QueuesCodes.queueNotFound));
    await store.deleteQueue(A, q.queue_id);
    assert.equal(await store.getQueue(A, q.queue_id), undefined);
    await assert.rejects(store.deleteQueue(A, q.queue_id), code(QueuesCodes.queueNotFound));
  });

  it("a queue has one consumer, managed in its account only, and gone with the queue", async (store) => {
    const q = await store.createQueue(A, "jobs");
    const c = await store.addConsumer(A, q.queue_id, worker("consumer", "jobs-dlq"));
    assert.deepEqual([c.type, c.script_name, c.queue_name, c.dead_letter_queue, c.settings.batch_size], ["worker", "consumer", "jobs", "jobs-dlq", 10]);
    await assert.rejects(store.addConsumer(A, q.queue_id, worker("other")), code(QueuesCodes.consumerExists));
    await assert.rejects(store.addConsumer(B, q.queue_id, worker("other")), code(QueuesCodes.queueNotFound));
    await assert.rejects(store.listConsumers(B, q.queue_id), code(QueuesCodes.queueNotFound));
    assert.deepEqual(await store.listConsumers(A, q.queue_id), [c]);
    const all = await store.workerConsumers();
    assert.deepEqual(
      all.map((w) => [w.account_id, w.script_name, w.queue_id]),
      [[A, "consumer", q.queue_id]],
    );
    const updated = await store.updateConsumer(A, q.queue_id, c.consumer_id, { ...worker("consumer"), settings: { ...c.settings, batch_size: 5 } });
    assert.deepEqual([updated.settings.batch_size, updated.dead_letter_queue], [5, undefined]);
    await assert.rejects(store.updateConsumer(B, q.queue_id, c.consumer_id, worker("x")), code(QueuesCodes.queueNotFound));
    await assert.rejects(store.deleteConsumer(B, q.queue_id, c.consumer_id), code(QueuesCodes.queueNotFound));
    await store.deleteConsumer(A, q.queue_id, c.consumer_id);
    await assert.rejects(store.deleteConsumer(A, q.queue_id, c.consumer_id), code(QueuesCodes.consumerNotFound));
    await store.addConsumer(A, q.queue_id, worker("again"));
    await store.deleteQueue(A, q.queue_id);
    assert.deepEqual(await store.workerConsumers(), []);
  });

  it("messages are leased oldest first once visible, each once while leased, and settle only under their lease", async (store) => {
    const q = (await store.createQueue(A, "m")).queue_id;
    const now = Date.now();
    await store.enqueue(q, [msg("one"), msg("two"), msg("later", 3600)], ROOMY);
    await assert.rejects(store.enqueue("f".repeat(32), [msg("x")], ROOMY), code(QueuesCodes.queueNotFound));
    const stats = await store.stats(q, now + 1000);
    assert.deepEqual([stats.backlog, stats.backlogBytes, stats.ready], [3, 11, 2]);
    assert.ok(stats.oldestSentAtMs! >= now - 60_000 && stats.oldestSentAtMs! <= Date.now());
    assert.ok(stats.oldestReadyAtMs! <= now + 1000);

    const first = await store.lease(q, 1, 60_000, now + 1000);
    assert.deepEqual(
      first.map((m) => [m.body.toString(), m.contentType, m.attempts]),
      [["one", "text", 1]],
    );
    assert.match(first[0]!.id, /^[0-9a-f]{32}$/);
    const second = await store.lease(q, 10, 60_000, now + 1000);
    assert.deepEqual(
      second.map((m) => m.body.toString()),
      ["two"],
    );
    assert.deepEqual(await store.lease(q, 10, 60_000, now + 1000), []);

    // A lease that expired is leased again (attempt 2); the old lease can no longer settle it.
    const again = await store.lease(q, 10, 60_000, now + 62_000);
    assert.deepEqual(
      again.map((m) => [m.body.toString(), m.attempts]),
      [
        ["one", 2],
        ["two", 2],
      ],
    );
    assert.equal(await store.settle(q, [{ id: first[0]!.id, leaseId: first[0]!.leaseId, action: "ack" }]), 0);
    const [one, two] = again;
    assert.equal(
      await store.settle(q, [
        { id: one!.id, leaseId: one!.leaseId, action: "ack" },
        { id: two!.id, leaseId: two!.leaseId, action: "retry", visibleAtMs: now + 100_000 },
      ]),
      2,
    );
    assert.deepEqual(await store.lease(q, 10, 60_000, now + 99_000), []);
    const retried = await store.lease(q, 10, 60_000, now + 100_000);
    assert.deepEqual(
      retried.map((m) => [m.body.toString(), m.attempts]),
      [["two", 3]],
    );
    assert.equal((await store.stats(q, now)).backlog, 2);
  });

  it("a dead-lettered message starts over at the end of the other queue; a dropped one is gone", async (store) => {
    const q = (await store.createQueue(A, "src")).queue_id;
    const dlq = (await store.createQueue(A, "dlq")).queue_id;
    await store.enqueue(q, [msg("bad"), msg("worse")], ROOMY);
    const [bad, worse] = await store.lease(q, 10, 60_000, Date.now());
    assert.equal(
      await store.settle(q, [
        { id: bad!.id, leaseId: bad!.leaseId, action: "dead-letter", toQueueId: dlq },
        { id: worse!.id, leaseId: worse!.leaseId, action: "drop" },
      ]),
      2,
    );
    assert.equal((await store.stats(q, Date.now())).backlog, 0);
    const moved = await store.lease(dlq, 10, 60_000, Date.now() + 1);
    assert.deepEqual(
      moved.map((m) => [m.body.toString(), m.attempts]),
      [["bad", 1]],
    );
  });

  it("parallel leases of one queue never hand out a message twice", async (store) => {
    const q = (await store.createQueue(A, "race")).queue_id;
    await store.enqueue(
      q,
      Array.from({ length: 40 }, (_, i) => msg(String(i))),
      ROOMY,
    );
    const now = Date.now() + 1;
    const leases = await Promise.all(Array.from({ length: 8 }, () => store.lease(q, 10, 60_000, now)));
    const ids = leases.flat().map((m) => m.id);
    assert.equal(ids.length, 40);
    assert.equal(new Set(ids).size, 40);
  });

  it("deleting a queue deletes its messages", async (store) => {
    const q = await store.createQueue(A, "gone");
    await store.enqueue(q.queue_id, [msg("x")], ROOMY);
    await store.deleteQueue(A, q.queue_id);
    assert.equal((await store.stats(q.queue_id, Date.now())).backlog, 0);
  });

  it("a script's worker consumers are found and removed in its account only", async (store) => {
    const jobs = await store.createQueue(A, "jobs");
    const mail = await store.createQueue(A, "mail");
    const pulled = await store.createQueue(A, "pulled");
    const theirs = await store.createQueue(B, "jobs");
    await store.addConsumer(A, jobs.queue_id, worker("app"));
    await store.addConsumer(A, mail.queue_id, worker("app"));
    await store.addConsumer(A, pulled.queue_id, { type: "http_pull", settings: worker("x").settings });
    await store.addConsumer(B, theirs.queue_id, worker("app"));
    assert.deepEqual((await store.consumersOfScript(A, "app")).map((c) => c.queue_name).sort(), ["jobs", "mail"]);
    assert.deepEqual(await store.consumersOfScript(A, "other"), []);
    assert.equal(await store.deleteConsumersOfScript(A, "app"), 2);
    assert.deepEqual(await store.consumersOfScript(A, "app"), []);
    assert.equal((await store.listConsumers(A, pulled.queue_id)).length, 1);
    assert.deepEqual(
      (await store.consumersOfScript(B, "app")).map((c) => c.queue_id),
      [theirs.queue_id],
    );
  });

  it("a purge deletes every message of the queue, leased ones too, in its account only, and records when it started", async (store) => {
    const q = (await store.createQueue(A, "full")).queue_id;
    const other = (await store.createQueue(A, "other")).queue_id;
    await store.enqueue(q, [msg("a"), msg("b"), msg("later", 3600)], ROOMY);
    await store.enqueue(other, [msg("kept")], ROOMY);
    const [held] = await store.lease(q, 1, 60_000, Date.now());
    assert.equal(await store.lastPurge(A, q), null, "never purged");
    await assert.rejects(store.purge(B, q, 1_000), code(QueuesCodes.queueNotFound));
    await assert.rejects(store.lastPurge(B, q), code(QueuesCodes.queueNotFound));
    assert.equal((await store.stats(q, Date.now())).backlog, 3);
    assert.equal(await store.purge(A, q, 1_700_000_000_123), 3);
    assert.equal(await store.lastPurge(A, q), 1_700_000_000_123);
    assert.equal(await store.lastPurge(A, other), null, "only the purged queue");
    assert.equal((await store.stats(q, Date.now())).backlog, 0);
    assert.equal((await store.stats(other, Date.now())).backlog, 1);
    // The batch out when the purge ran settles nothing.
    assert.equal(await store.settle(q, [{ id: held!.id, leaseId: held!.leaseId, action: "retry", visibleAtMs: 0 }]), 0);
    assert.equal(await store.purge(A, q, 1_700_000_000_456), 0);
    assert.equal(await store.lastPurge(A, q), 1_700_000_000_456, "the last purge counts");
    await assert.rejects(store.purge(A, "f".repeat(32), 1_000), code(QueuesCodes.queueNotFound));
  });
  it("the backlog counters follow every send, retry, ack, drop and dead-letter move", async (store) => {
    const q = (await store.createQueue(A, "counted")).queue_id;
    const dlq = (await store.createQueue(A, "counted-dlq")).queue_id;
    await store.enqueue(q, [msg("aaaa"), msg("bb")], ROOMY);
    assert.deepEqual(await store.backlog(q), { messages: 2, bytes: 6 });
    const [a, b] = await store.lease(q, 10, 60_000, Date.now());
    assert.equal(await store.settle(q, [{ id: a!.id, leaseId: a!.leaseId, action: "retry", visibleAtMs: 0 }]), 1);
    assert.deepEqual(await store.backlog(q), { messages: 2, bytes: 6 }, "a retry keeps the message");
    assert.equal(await store.settle(q, [{ id: b!.id, leaseId: b!.leaseId, action: "ack" }]), 1);
    assert.deepEqual(await store.backlog(q), { messages: 1, bytes: 4 });
    assert.equal(await store.settle(q, [{ id: b!.id, leaseId: b!.leaseId, action: "ack" }]), 0);
    assert.deepEqual(await store.backlog(q), { messages: 1, bytes: 4 }, "a settlement that settles nothing counts nothing");
    const [again] = await store.lease(q, 10, 60_000, Date.now() + 1);
    assert.equal(await store.settle(q, [{ id: again!.id, leaseId: again!.leaseId, action: "dead-letter", toQueueId: dlq }]), 1);
    assert.deepEqual(
      [await store.backlog(q), await store.backlog(dlq)],
      [
        { messages: 0, bytes: 0 },
        { messages: 1, bytes: 4 },
      ],
    );
    await store.enqueue(q, [msg("ccc")], ROOMY);
    const [dropped] = await store.lease(q, 10, 60_000, Date.now() + 2);
    await store.settle(q, [{ id: dropped!.id, leaseId: dropped!.leaseId, action: "drop" }]);
    assert.deepEqual(await store.backlog(q), { messages: 0, bytes: 0 });
    const stats = await store.stats(dlq, Date.now() + 3);
    assert.deepEqual([stats.backlog, stats.backlogBytes], [1, 4], "stats show the counters");
  });

  it("a send past the cap is refused whole with Storage Limit Exceeded, and frees up as messages go", async (store) => {
    const q = (await store.createQueue(A, "capped")).queue_id;
    const theirs = (await store.createQueue(B, "capped")).queue_id;
    await store.enqueue(q, [msg("12345")], 10);
    const full = await store.enqueue(q, [msg("123"), msg("456")], 10).then(
      () => assert.fail("a batch past the cap was taken"),
      (e: unknown) => e as { status: number; message: string; errors: { code: number }[] },
    );
    assert.deepEqual([full.status, full.errors[0]!.code], [413, QueuesCodes.backlogFull]);
    assert.match(full.message, /^Storage Limit Exceeded\b/);
    assert.deepEqual(await store.backlog(q), { messages: 1, bytes: 5 }, "nothing of the refused batch was kept");
    assert.equal((await store.lease(q, 10, 60_000, Date.now())).length, 1);
    await store.enqueue(theirs, [msg("1234567890")], 10);
    assert.deepEqual(await store.backlog(theirs), { messages: 1, bytes: 10 }, "another account's queue has its own room");
    await store.enqueue(q, [msg("12"), msg("345")], 10);
    assert.deepEqual(await store.backlog(q), { messages: 3, bytes: 10 }, "up to the cap exactly");
    await assert.rejects(store.enqueue(q, [msg("x")], 10), code(QueuesCodes.backlogFull));
    const [first] = await store.lease(q, 1, 60_000, Date.now() + 60_001);
    await store.settle(q, [{ id: first!.id, leaseId: first!.leaseId, action: "ack" }]);
    await store.enqueue(q, [msg("x")], 10);
    assert.deepEqual(await store.backlog(q), { messages: 3, bytes: 10 - first!.body.length + 1 });
  });

  it("a purge and a delete take the backlog to zero; a dead-letter move may pass its queue's cap", async (store) => {
    const q = (await store.createQueue(A, "emptied")).queue_id;
    const dlq = (await store.createQueue(A, "emptied-dlq")).queue_id;
    await store.enqueue(dlq, [msg("1234567890")], 10);
    await store.enqueue(q, [msg("abc"), msg("later", 3600)], 10);
    const [held] = await store.lease(q, 1, 60_000, Date.now());
    assert.equal(await store.settle(q, [{ id: held!.id, leaseId: held!.leaseId, action: "dead-letter", toQueueId: dlq }]), 1);
    assert.deepEqual(await store.backlog(dlq), { messages: 2, bytes: 13 }, "the move takes no new room, so the cap does not refuse it");
    await store.enqueue(q, [msg("1234")], 10);
    assert.equal(await store.purge(A, q, Date.now()), 2);
    assert.deepEqual(await store.backlog(q), { messages: 0, bytes: 0 });
    await store.enqueue(q, [msg("1234567890")], 10);
    await store.deleteQueue(A, dlq);
    assert.deepEqual(await store.backlog(dlq), { messages: 0, bytes: 0 });
    await assert.rejects(store.enqueue(dlq, [msg("x")], 10), code(QueuesCodes.queueNotFound));
  });

  it("concurrent senders never take a backlog past the cap", async (store) => {
    const q = (await store.createQueue(A, "crowded")).queue_id;
    const sends = await Promise.allSettled(Array.from({ length: 24 }, (_, i) => store.enqueue(q, [msg(String(i).padStart(10, "0"))], 100)));
    assert.equal(sends.filter((r) => r.status === "fulfilled").length, 10);
    for (const r of sends) if (r.status === "rejected") assert.ok(code(QueuesCodes.backlogFull)(r.reason), String(r.reason));
    assert.deepEqual(await store.backlog(q), { messages: 10, bytes: 100 });
    assert.equal((await store.lease(q, 100, 60_000, Date.now())).length, 10, "the counters match the messages");
  });

  it("a queue's settings: the hosted defaults, set on create, changed one at a time, in its account only", async (store) => {
    const plain = await store.createQueue(A, "plain");
    assert.deepEqual(plain.settings, { delivery_delay: 0, delivery_paused: false, message_retention_period: 345_600 });
    const q = await store.createQueue(A, "tuned", { delivery_delay: 5, message_retention_period: 60 });
    assert.deepEqual(q.settings, { delivery_delay: 5, delivery_paused: false, message_retention_period: 60 });
    assert.deepEqual((await store.getQueue(A, q.queue_id))!.settings, q.settings);
    const paused = await store.updateQueue(A, q.queue_id, { settings: { delivery_paused: true } });
    assert.deepEqual([paused.queue_name, paused.settings], ["tuned", { delivery_delay: 5, delivery_paused: true, message_retention_period: 60 }]);
    await assert.rejects(store.updateQueue(B, q.queue_id, { settings: { delivery_delay: 0 } }), code(QueuesCodes.queueNotFound));
    const renamed = await store.updateQueue(A, q.queue_id, { name: "tuned-2", settings: { delivery_delay: 0, message_retention_period: 1_209_600 } });
    assert.deepEqual([renamed.queue_name, renamed.settings], ["tuned-2", { delivery_delay: 0, delivery_paused: true, message_retention_period: 1_209_600 }]);
    assert.deepEqual((await store.listQueues(A, { names: ["tuned-2"] })).queues[0]!.settings, renamed.settings);
  });

  it("a message sent without a delay takes its queue's delivery_delay; its own delay (0 too) wins", async (store) => {
    const q = (await store.createQueue(A, "delayed", { delivery_delay: 30 })).queue_id;
    // The send is stamped between these two readings of the clock (a busy machine may put milliseconds between).
    const before = Date.now();
    await store.enqueue(q, [{ body: Buffer.from("queue-delay"), contentType: "text" }, msg("now", 0), msg("own", 60)], ROOMY);
    const after = Date.now();
    assert.deepEqual(
      (await store.lease(q, 10, 3_600_000, after)).map((m) => m.body.toString()),
      ["now"],
    );
    assert.equal((await store.stats(q, after)).ready, 0);
    assert.deepEqual(await store.lease(q, 10, 3_600_000, before + 29_000), [], "not before its queue's delay");
    assert.deepEqual(
      (await store.lease(q, 10, 3_600_000, Date.now() + 30_000)).map((m) => m.body.toString()),
      ["queue-delay"],
    );
    assert.deepEqual(
      (await store.lease(q, 10, 3_600_000, Date.now() + 60_000)).map((m) => m.body.toString()),
      ["own"],
    );
  });

  it("nothing of a paused queue is leased, and all of it once resumed; sends are still taken", async (store) => {
    const q = await store.createQueue(A, "held", { delivery_paused: true });
    await store.enqueue(q.queue_id, [msg("a"), msg("b")], ROOMY);
    const now = Date.now();
    assert.deepEqual(await store.lease(q.queue_id, 10, 60_000, now), []);
    assert.deepEqual([(await store.stats(q.queue_id, now)).ready, (await store.backlog(q.queue_id)).messages], [0, 2]);
    await store.updateQueue(A, q.queue_id, { settings: { delivery_paused: false } });
    assert.equal((await store.lease(q.queue_id, 10, 60_000, now)).length, 2);
  });

  it("a message past its queue's retention is never leased; the sweep removes it and lowers the counters once", async (store) => {
    const short = (await store.createQueue(A, "short", { message_retention_period: 60 })).queue_id;
    const long = (await store.createQueue(A, "long")).queue_id;
    await store.enqueue(short, [msg("aa"), msg("bbb"), msg("c", 3600)], ROOMY);
    await store.enqueue(long, [msg("kept")], ROOMY);
    const [held] = await store.lease(short, 1, 3_600_000, Date.now());
    const later = Date.now() + 61_000;
    assert.deepEqual(await store.lease(short, 10, 60_000, later), [], "expired, swept or not");
    assert.equal((await store.stats(short, later)).ready, 0);
    assert.equal(await store.sweepExpired(Date.now(), 100), 0, "nothing has expired yet");
    assert.equal(await store.sweepExpired(later, 2), 2, "at most the batch per call");
    assert.equal(await store.sweepExpired(later, 2), 1);
    assert.equal(await store.sweepExpired(later, 2), 0);
    assert.deepEqual(await store.backlog(short), { messages: 0, bytes: 0 });
    assert.deepEqual(await store.backlog(long), { messages: 1, bytes: 4 });
    assert.equal(await store.settle(short, [{ id: held!.id, leaseId: held!.leaseId, action: "ack" }]), 0, "a swept message settles nothing");
    assert.deepEqual(await store.backlog(short), { messages: 0, bytes: 0 });
    assert.equal((await store.lease(long, 10, 60_000, later)).length, 1);

    // Sweeps at once (on PostgreSQL, over several connections) delete and count each message once.
    await store.enqueue(
      short,
      Array.from({ length: 30 }, (_, i) => msg(String(i).padStart(3, "0"))),
      ROOMY,
    );
    const swept = await Promise.all(Array.from({ length: 4 }, () => store.sweepExpired(later, 5)));
    let total = swept.reduce((a, b) => a + b, 0);
    for (let n = 1; n > 0; total += n) n = await store.sweepExpired(later, 7);
    assert.equal(total, 30);
    assert.deepEqual(await store.backlog(short), { messages: 0, bytes: 0 });
  });
});
