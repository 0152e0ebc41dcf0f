import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { TestPlatform } from "../core/testing/platform.js";
import { hit, logEntries, startPlatform, uploadScript } from "../workers/testing/helpers.js";
import { eventually } from "../core/testing/eventually.js";

// Queues end to end: real Workers on the platform's workerd, a producer using workerd's own queue binding
// (env.Q.send / sendBatch) and a consumer whose queue() handler gets workerd's own queue event.
let p: TestPlatform;

const PRODUCER = `
export default {
  async fetch(req, env) {
    const u = new URL(req.url);
    const q = env[u.searchParams.get("q") ?? "JOBS"];
    try {
      switch (u.pathname) {
        case "/send":
          // v8: structured clone (a Date stays a Date); without a content type this compatibility date sends JSON.
          await q.send({ tag: u.searchParams.get("tag"), when: new Date(86400000), set: new Set([1, 2]) }, { contentType: "v8" });
          return new Response("sent");
        case "/send-json":
          await q.send(JSON.parse(u.searchParams.get("body")));
          return new Response("sent");
        case "/send-text":
          await q.send(u.searchParams.get("tag"), { contentType: "text" });
          return new Response("sent");
        case "/delayed":
          await q.send(u.searchParams.get("tag"), { contentType: "text", delaySeconds: 2 });
          return new Response("sent");
        case "/batch": {
          const r = await q.sendBatch([
            { body: "plain text", contentType: "text" },
            { body: { k: "json" }, contentType: "json" },
            { body: new Uint8Array([1, 2, 3]), contentType: "bytes" },
          ]);
          return new Response("sent");
        }
        case "/too-big":
          await q.send("x".repeat(128 * 1024 + 1), { contentType: "text" });
          return new Response("sent");
        case "/too-many":
          await q.sendBatch(Array.from({ length: 101 }, (_, i) => ({ body: i })));
          return new Response("sent");
        case "/metrics":
          return Response.json(await q.metrics());
      }
      return new Response("no route", { status: 404 });
    } catch (e) {
      return new Response(String(e.message), { status: 400 });
    }
  },
};
`;

const CONSUMER = `
const show = (b) => (b instanceof Uint8Array ? { bytes: [...b] } : b && b.when instanceof Date && b.set instanceof Set ? { tag: b.tag, when: b.when.toISOString(), set: [...b.set] } : b);
export default {
  async fetch() { return new Response("consumer"); },
  async queue(batch, env, ctx) {
    for (const m of batch.messages) console.log("QUEUE " + JSON.stringify({ queue: batch.queue, id: m.id, attempts: m.attempts, body: show(m.body), ts: m.timestamp.getTime() }));
    if (batch.queue === "flaky") {
      for (const m of batch.messages) if (m.body.ackFirst) m.ack();
      throw new Error("consumer failed on purpose");
    }
    if (batch.queue === "selective") {
      for (const m of batch.messages) if (m.body === "again" && m.attempts === 1) m.retry({ delaySeconds: 1 });
    }
  },
};
`;

interface Seen {
  queue: string;
  id: string;
  attempts: number;
  body: any;
  ts: number;
  at: number;
}

/** The messages the consumer logged, in order. */
function seen(): Seen[] {
  return logEntries(p)
    .filter((l) => typeof l.msg === "string" && l.msg.startsWith("QUEUE ") && l.script === "consumer")
    .map((l) => ({ ...(JSON.parse(l.msg.slice(6)) as Omit<Seen, "at">), at: Date.parse(l.time as string) }));
}

const queueIds = new Map<string, string>();
async function createQueue(name: string, accountId = p.accountId, headers?: Record<string, string>): Promise<string> {
  const r = await p.api("POST", `/accounts/${accountId}/queues`, { queue_name: name }, headers);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  queueIds.set(name, r.body.result.queue_id);
  return r.body.result.queue_id;
}

async function addConsumer(queue: string, settings: Record<string, unknown>, extra: Record<string, unknown> = {}): Promise<void> {
  const r = await p.api("POST", `/accounts/${p.accountId}/queues/${queueIds.get(queue)}/consumers`, { script_name: "consumer", settings, ...extra });
  assert.equal(r.status, 200, JSON.stringify(r.body));
}

before(async () => {
  p = await startPlatform(["--queue-poll-interval", "0.2"]);
  for (const q of ["jobs", "flaky", "flaky-dlq", "selective"]) await createQueue(q);
  const slow = await p.api("POST", `/accounts/${p.accountId}/queues`, { queue_name: "slow", settings: { delivery_delay: 2 } });
  assert.equal(slow.status, 200, JSON.stringify(slow.body));
  queueIds.set("slow", slow.body.result.queue_id);
  const producers = [
    { type: "queue", name: "JOBS", queue_name: "jobs" },
    { type: "queue", name: "FLAKY", queue_name: "flaky" },
    { type: "queue", name: "SELECTIVE", queue_name: "selective" },
    { type: "queue", name: "SLOW", queue_name: "slow" },
  ];
  const up = await uploadScript(p, "producer", PRODUCER, { bindings: producers });
  assert.equal(up.status, 200, JSON.stringify(up.body));
  const cons = await uploadScript(p, "consumer", CONSUMER);
  assert.equal(cons.status, 200, JSON.stringify(cons.body));
  await addConsumer("jobs", { batch_size: 3, max_wait_time_ms: 200 });
  await addConsumer("flaky", { batch_size: 10, max_wait_time_ms: 100, max_retries: 2 }, { dead_letter_queue: "flaky-dlq" });
  await addConsumer("flaky-dlq", { batch_size: 10, max_wait_time_ms: 100 });
  await addConsumer("selective", { batch_size: 10, max_wait_time_ms: 100 });
  await addConsumer("slow", { batch_size: 10, max_wait_time_ms: 100 });
});
after(async () => {
  await p?.dispose();
});

test("send() and sendBatch() reach the consumer's queue() with their bodies, ids, timestamps and attempts", async () => {
  const sent = Date.now();
  assert.equal((await hit(p, "producer", "/send?tag=v8")).text, "sent");
  assert.equal((await hit(p, "producer", `/send-json?body=${encodeURIComponent('{"n":1}')}`)).text, "sent");
  assert.equal((await hit(p, "producer", "/batch")).text, "sent");
  await eventually(() => seen().filter((s) => s.queue === "jobs").length >= 5, "five messages delivered");
  const jobs = seen().filter((s) => s.queue === "jobs");
  assert.deepEqual(
    jobs.map((s) => s.body),
    [{ tag: "v8", when: "1970-01-02T00:00:00.000Z", set: [1, 2] }, { n: 1 }, "plain text", { k: "json" }, { bytes: [1, 2, 3] }],
  );
  for (const s of jobs) {
    assert.match(s.id, /^[0-9a-f]{32}$/);
    assert.equal(s.attempts, 1);
    assert.ok(s.ts >= sent - 1000 && s.ts <= Date.now(), "timestamp is when it was sent");
  }
  // Acknowledged by returning: the queue is empty and nothing comes again.
  const q = await p.api("GET", `/accounts/${p.accountId}/queues/${queueIds.get("jobs")}`);
  assert.equal(q.status, 200);
  assert.equal(q.body.result.consumers[0].script_name, "consumer");
  const metrics = await hit(p, "producer", "/metrics");
  assert.equal(JSON.parse(metrics.text).backlogCount, 0, metrics.text);
});

test("a delayed message is not delivered before its delay", async () => {
  const sent = Date.now();
  await hit(p, "producer", "/delayed?tag=later");
  await eventually(() => seen().some((s) => s.body === "later"), "the delayed message");
  const got = seen().find((s) => s.body === "later")!;
  assert.ok(got.at - sent >= 2000, `delivered ${got.at - sent} ms after the send`);
});

test("a message sent without a delay waits its queue's delivery_delay", async () => {
  const sent = Date.now();
  assert.equal((await hit(p, "producer", "/send-text?q=SLOW&tag=queue-delayed")).text, "sent");
  await eventually(() => seen().some((s) => s.body === "queue-delayed"), "the message of the delayed queue");
  const got = seen().find((s) => s.body === "queue-delayed")!;
  assert.equal(got.queue, "slow");
  assert.ok(got.at - sent >= 2000, `delivered ${got.at - sent} ms after the send`);
  assert.ok(got.at - got.ts >= 2000, `delivered ${got.at - got.ts} ms after its timestamp`);
});

test("a failing consumer's messages are retried up to max_retries, then go to the dead letter queue; ack() holds", async () => {
  await hit(p, "producer", `/send-json?q=FLAKY&body=${encodeURIComponent('{"fail":1}')}`);
  await hit(p, "producer", `/send-json?q=FLAKY&body=${encodeURIComponent('{"ackFirst":1}')}`);
  await eventually(() => seen().some((s) => s.queue === "flaky-dlq"), "the message in the dead letter queue", 30_000);
  const flaky = seen().filter((s) => s.queue === "flaky");
  const failing = flaky.filter((s) => s.body.fail === 1);
  assert.deepEqual(
    failing.map((s) => s.attempts),
    [1, 2, 3],
    "delivered once and retried twice",
  );
  assert.deepEqual(
    flaky.filter((s) => s.body.ackFirst === 1).map((s) => s.attempts),
    [1],
    "acknowledged on its own though the handler threw",
  );
  const dead = seen().filter((s) => s.queue === "flaky-dlq");
  assert.deepEqual(
    dead.map((s) => [s.body, s.attempts]),
    [[{ fail: 1 }, 1]],
  );
  assert.ok(logEntries(p).some((l) => l.msg === "queue messages moved to the dead letter queue after their retries" && l.dead_letter_queue === "flaky-dlq"));
});

test("message.retry() redelivers that message only, after its delay", async () => {
  await hit(p, "producer", `/send-json?q=SELECTIVE&body=${encodeURIComponent('"again"')}`);
  await hit(p, "producer", `/send-json?q=SELECTIVE&body=${encodeURIComponent('"once"')}`);
  await eventually(() => seen().filter((s) => s.queue === "selective").length >= 3, "the retried message");
  const sel = seen().filter((s) => s.queue === "selective");
  assert.deepEqual(sel.map((s) => [s.body, s.attempts]).sort(), [
    ["again", 1],
    ["again", 2],
    ["once", 1],
  ]);
});

test("the producer is refused over the hosted limits, with the reason", async () => {
  const big = await hit(p, "producer", "/too-big");
  assert.equal(big.status, 400);
  assert.match(big.text, /at most 131072 bytes/);
  const many = await hit(p, "producer", "/too-many");
  assert.equal(many.status, 400);
  assert.match(many.text, /at most 100 messages/);
});

test("a script cannot bind another account's queue, nor a queue that does not exist", async () => {
  const { createAccount } = await import("../workers/testing/helpers.js");
  const other = await createAccount(p, "queues-other");
  const r = await p.api("POST", `/accounts/${other}/queues`, { queue_name: "secret-b" }, p.keyHeaders());
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const up = await uploadScript(p, "thief", PRODUCER, { bindings: [{ type: "queue", name: "JOBS", queue_name: "secret-b" }] });
  assert.equal(up.status, 400, JSON.stringify(up.body));
  assert.match(up.body.errors[0].message, /Queue "secret-b" of the binding JOBS does not exist in this account/);
  // A producer's own delay (wrangler's [[queues.producers]] delivery_delay) is refused, not dropped.
  const delayed = await uploadScript(p, "delayed-producer", PRODUCER, { bindings: [{ type: "queue", name: "JOBS", queue_name: "jobs", delivery_delay: 5 }] });
  assert.equal(delayed.status, 400, JSON.stringify(delayed.body));
  assert.match(delayed.body.errors[0].message, /delivery_delay on a queue binding is not supported here/);
  // The other account's own script with the same binding name reaches its own queue only.
  const own = await uploadScript(
    p,
    "owner-b",
    PRODUCER,
    { bindings: [{ type: "queue", name: "JOBS", queue_name: "secret-b" }] },
    { accountId: other, headers: p.keyHeaders() },
  );
  assert.equal(own.status, 200, JSON.stringify(own.body));
  assert.equal((await hit(p, "owner-b", "/send-json?body=1")).text, "sent");
  const listed = await p.api("GET", `/accounts/${other}/queues`, undefined, p.keyHeaders());
  const metrics = await hit(p, "owner-b", "/metrics");
  assert.equal(JSON.parse(metrics.text).backlogCount, 1);
  assert.equal(listed.body.result[0].queue_name, "secret-b");
  // A consumer cannot be another account's script.
  const steal = await p.api("POST", `/accounts/${other}/queues/${r.body.result.queue_id}/consumers`, { script_name: "consumer" }, p.keyHeaders());
  assert.equal(steal.status, 404, JSON.stringify(steal.body));
});
