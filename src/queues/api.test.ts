import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import Cloudflare from "cloudflare";
import type { TestPlatform } from "../core/testing/platform.js";
import { createAccount, startPlatform } from "../workers/testing/helpers.js";
import { QueuesCodes } from "./errors.js";

// The official TypeScript SDK (a real client) and plain HTTP against the Queues routes, with two accounts.
let p: TestPlatform;
let cf: Cloudflare;
let accountB: string;
let cfB: Cloudflare;
before(async () => {
  p = await startPlatform();
  cf = new Cloudflare({ apiToken: p.token, baseURL: p.apiUrl, maxRetries: 0 });
  accountB = await createAccount(p, "queues-b");
  const tokenB = (await p.api("POST", "/user/tokens", { name: "b", permissions: ["queues_edit"], account_id: accountB }, p.keyHeaders())).body.result.value;
  cfB = new Cloudflare({ apiToken: tokenB, baseURL: p.apiUrl, maxRetries: 0 });
});
after(async () => {
  await p?.dispose();
});

const status = (expected: number, code?: number) => (e: unknown) => {
  assert.equal((e as { status?: number }).status, expected, String(e));
  if (code !== undefined) assert.equal((e as { errors?: { code: number }[] }).errors?.[0]?.code, code, String(e));
  return true;
};

test("cloudflare SDK: create, list, get, rename, delete, each account seeing its own queues only", async () => {
  const account_id = p.accountId;
  const q = await cf.queues.create({ account_id, queue_name: "sdk-queue" });
  assert.match(q.queue_id!, /^[0-9a-f]{32}$/);
  assert.equal(q.queue_name, "sdk-queue");
  const listed: string[] = [];
  for await (const x of cf.queues.list({ account_id })) listed.push(x.queue_name!);
  assert.deepEqual(listed, ["sdk-queue"]);
  assert.equal((await cf.queues.get(q.queue_id!, { account_id })).queue_name, "sdk-queue");
  assert.equal((await cf.queues.update(q.queue_id!, { account_id, queue_name: "sdk-renamed" })).queue_name, "sdk-renamed");

  // The same name in the other account is another queue; neither account reaches the other's.
  const b = await cfB.queues.create({ account_id: accountB, queue_name: "sdk-renamed" });
  assert.notEqual(b.queue_id, q.queue_id);
  await assert.rejects(cfB.queues.get(q.queue_id!, { account_id: accountB }), status(404, QueuesCodes.queueNotFound));
  await assert.rejects(cfB.queues.delete(q.queue_id!, { account_id: accountB }), status(404));
  await assert.rejects(
    cfB.queues.list({ account_id }).then((page) => page),
    status(403),
  );
  await assert.rejects(cf.queues.create({ account_id: accountB, queue_name: "intruder" }), status(403));

  // The older /workers/queues path answers the same.
  const legacy = await p.api("GET", `/accounts/${account_id}/workers/queues/${q.queue_id}`);
  assert.equal(legacy.body.result.queue_name, "sdk-renamed");
  assert.equal((await p.api("GET", `/accounts/${accountB}/workers/queues/${q.queue_id}`, undefined, p.keyHeaders())).status, 404);

  await cf.queues.delete(q.queue_id!, { account_id });
  await assert.rejects(cf.queues.get(q.queue_id!, { account_id }), status(404));
  assert.equal((await cfB.queues.get(b.queue_id!, { account_id: accountB })).queue_name, "sdk-renamed");
});

test("names are checked and unique per account; bad bodies are refused with the reason", async () => {
  const account_id = p.accountId;
  for (const bad of ["", "UPPER", "with space", "-lead", "trail-", "x".repeat(64), "__proto__", "a/b", "é"])
    await assert.rejects(cf.queues.create({ account_id, queue_name: bad }), status(400, QueuesCodes.badRequest), bad);
  await cf.queues.create({ account_id, queue_name: "taken" });
  await assert.rejects(cf.queues.create({ account_id, queue_name: "taken" }), status(409, QueuesCodes.nameTaken));
  const noName = await p.api("POST", `/accounts/${account_id}/queues`, { name: "x" });
  assert.equal(noName.status, 400);
  const settings = await p.api("PUT", `/accounts/${account_id}/queues/${"0".repeat(32)}`, { queue_name: "x", settings: { delivery_visibility: 5 } });
  assert.equal(settings.status, 400, "settings this platform does not have are refused, not ignored");
});

test("consumers: a worker consumer must be a script of the account; one consumer per queue; settings checked", async () => {
  const account_id = p.accountId;
  const q = await cf.queues.create({ account_id, queue_name: "with-consumer" });
  await assert.rejects(
    cf.queues.consumers.create(q.queue_id!, { account_id, type: "worker", script_name: "no-such-script" }),
    status(404, QueuesCodes.scriptNotFound),
  );
  const pull = await cf.queues.consumers.create(q.queue_id!, { account_id, type: "http_pull", settings: { batch_size: 5 } });
  assert.equal(pull.type, "http_pull");
  await assert.rejects(cf.queues.consumers.create(q.queue_id!, { account_id, type: "http_pull" }), status(409));
  const got = await cf.queues.consumers.get(pull.consumer_id!, { account_id, queue_id: q.queue_id! });
  assert.equal((got.settings as { batch_size: number }).batch_size, 5);
  for (const settings of [
    { batch_size: 0 },
    { batch_size: 101 },
    { max_retries: 101 },
    { max_wait_time_ms: 60_001 },
    { retry_delay: -1 },
    { max_concurrency: 5 },
  ]) {
    const r: { status: number } = await p.api("PUT", `/accounts/${account_id}/queues/${q.queue_id}/consumers/${pull.consumer_id}`, {
      type: "http_pull",
      settings,
    });
    assert.equal(r.status, 400, JSON.stringify(settings));
  }
  const dlqSelf = await p.api("PUT", `/accounts/${account_id}/queues/${q.queue_id}/consumers/${pull.consumer_id}`, {
    type: "http_pull",
    dead_letter_queue: "with-consumer",
  });
  assert.equal(dlqSelf.status, 400);
  // Account B cannot see or change it.
  const seenByB = await p.api("GET", `/accounts/${accountB}/queues/${q.queue_id}/consumers`, undefined, p.keyHeaders());
  assert.equal(seenByB.status, 404);
  await cf.queues.consumers.delete(pull.consumer_id!, { account_id, queue_id: q.queue_id! });
  assert.equal((await cf.queues.get(q.queue_id!, { account_id })).consumers?.length, 0);
});

test("messages: push and bulk push, then an HTTP pull consumer pulls, acks and retries", async () => {
  const account_id = p.accountId;
  const q = await cf.queues.create({ account_id, queue_name: "pulled" });
  const queue_id = q.queue_id!;
  await cf.queues.messages.push(queue_id, { account_id, body: { hello: "json" } });
  await cf.queues.messages.bulkPush(queue_id, {
    account_id,
    messages: [
      { body: "plain", content_type: "text" },
      { body: [1, 2], content_type: "json" },
    ],
  });
  const early = await p.api("POST", `/accounts/${account_id}/queues/${queue_id}/messages/pull`, {});
  assert.equal(early.status, 400, "no pull consumer yet");
  await cf.queues.consumers.create(queue_id, {
    account_id,
    type: "http_pull",
    settings: { batch_size: 10, max_retries: 1, visibility_timeout_ms: 60_000 },
  } as never);
  const metrics = await cf.queues.getMetrics(queue_id, { account_id });
  assert.equal((metrics as { backlog_count: number }).backlog_count, 3);

  const pulled = (await cf.queues.messages.pull(queue_id, { account_id, batch_size: 10 })) as {
    messages: { body: string; lease_id: string; attempts: number; metadata: Record<string, string> }[];
  };
  assert.deepEqual(
    pulled.messages.map((m) => [m.body, m.attempts, m.metadata["CF-Content-Type"]]),
    [
      ['{"hello":"json"}', 1, "json"],
      ["plain", 1, "text"],
      ["[1,2]", 1, "json"],
    ],
  );
  // Leased: a second pull gets nothing.
  assert.equal(((await cf.queues.messages.pull(queue_id, { account_id })) as { messages: unknown[] }).messages.length, 0);
  const [first, second, third] = pulled.messages;
  const acked = (await cf.queues.messages.ack(queue_id, {
    account_id,
    acks: [{ lease_id: first!.lease_id }, { lease_id: second!.lease_id }],
    retries: [{ lease_id: third!.lease_id, delay_seconds: 0 }],
  })) as unknown as { ackCount: number; retryCount: number; warnings: string[] };
  assert.deepEqual([acked.ackCount, acked.retryCount, acked.warnings], [2, 1, []]);
  const again = (await cf.queues.messages.pull(queue_id, { account_id })) as { messages: { body: string; attempts: number; lease_id: string }[] };
  assert.deepEqual(
    again.messages.map((m) => [m.body, m.attempts]),
    [["[1,2]", 2]],
  );
  // A stale lease settles nothing; a forged one is reported.
  const stale = (await cf.queues.messages.ack(queue_id, { account_id, acks: [{ lease_id: first!.lease_id }, { lease_id: "forged" }] })) as unknown as {
    warnings: string[];
  };
  assert.equal(stale.warnings.length, 2, JSON.stringify(stale));
  // Its retries are spent (max_retries 1): retried once more, it is dropped, not pulled a third time.
  await cf.queues.messages.ack(queue_id, { account_id, retries: [{ lease_id: again.messages[0]!.lease_id }] });
  assert.equal(((await cf.queues.messages.pull(queue_id, { account_id })) as { messages: unknown[] }).messages.length, 0);
  assert.equal(((await cf.queues.getMetrics(queue_id, { account_id })) as { backlog_count: number }).backlog_count, 0);
});

test("hostile messages get 4xx and store nothing", async () => {
  const account_id = p.accountId;
  const q = await cf.queues.create({ account_id, queue_name: "hostile" });
  const path = `/accounts/${account_id}/queues/${q.queue_id}/messages`;
  const send = (body: unknown, sub = "") => p.api("POST", `${path}${sub}`, body);
  assert.equal((await send({ body: "x".repeat(128 * 1024 + 1), content_type: "text" })).status, 413);
  assert.equal((await send({ body: "ok", content_type: "v8" })).status, 400);
  assert.equal((await send({ body: 5, content_type: "text" })).status, 400);
  assert.equal((await send({ body: "ok", content_type: "text", delay_seconds: -1 })).status, 400);
  assert.equal((await send({ body: "ok", content_type: "text", delay_seconds: 43_201 })).status, 400);
  assert.equal((await send({ content_type: "json" })).status, 400);
  assert.equal((await send({ messages: Array.from({ length: 101 }, () => ({ body: 1 })) }, "/batch")).status, 400);
  assert.equal((await send({ messages: [] }, "/batch")).status, 400);
  const half = "y".repeat(100 * 1024);
  assert.equal(
    (
      await send(
        {
          messages: [
            { body: half, content_type: "text" },
            { body: half, content_type: "text" },
            { body: half, content_type: "text" },
          ],
        },
        "/batch",
      )
    ).status,
    413,
  );
  // A body past the route's limit is refused before it is parsed.
  assert.equal((await send({ body: "z".repeat(2 * 1024 * 1024) })).status, 413);
  const metrics = await cf.queues.getMetrics(q.queue_id!, { account_id });
  assert.equal((metrics as { backlog_count: number }).backlog_count, 0, "nothing was stored");
  // Unknown queue ids, and another account's, answer 404.
  assert.equal((await p.api("POST", `/accounts/${account_id}/queues/${"f".repeat(32)}/messages`, { body: 1 })).status, 404);
  const bq = await cfB.queues.create({ account_id: accountB, queue_name: "b-only" });
  assert.equal((await p.api("POST", `/accounts/${account_id}/queues/${bq.queue_id}/messages`, { body: 1 })).status, 404);
});

test("queue settings: taken on create within the hosted ranges, refused outside them with the field named, nothing created", async () => {
  const base = `/accounts/${p.accountId}/queues`;
  const created = await p.api("POST", base, {
    queue_name: "settings-on",
    settings: { delivery_delay: 30, delivery_paused: false, message_retention_period: 86_400 },
  });
  assert.equal(created.status, 200, JSON.stringify(created.body));
  assert.deepEqual(created.body.result.settings, { delivery_delay: 30, delivery_paused: false, message_retention_period: 86_400 });
  const plain = await p.api("POST", base, { queue_name: "settings-default" });
  assert.deepEqual(plain.body.result.settings, { delivery_delay: 0, delivery_paused: false, message_retention_period: 345_600 });
  for (const [settings, field] of [
    [{ delivery_delay: 43_201 }, "delivery_delay"],
    [{ delivery_delay: -1 }, "delivery_delay"],
    [{ delivery_delay: 1.5 }, "delivery_delay"],
    [{ delivery_paused: "yes" }, "delivery_paused"],
    [{ message_retention_period: 59 }, "message_retention_period"],
    [{ message_retention_period: 1_209_601 }, "message_retention_period"],
    [{ visibility: 1 }, ""],
  ] as const) {
    const res = await p.api("POST", base, { queue_name: "settings-refused", settings });
    assert.equal(res.status, 400, JSON.stringify(settings));
    assert.equal(res.body.errors[0].code, QueuesCodes.badRequest);
    if (field) {
      assert.match(res.body.errors[0].message, new RegExp(`^settings\\.${field}: ${field} must be`));
      assert.equal(res.body.errors[0].source?.pointer, `/settings/${field}`);
    }
  }
  const listed = await p.api("GET", `${base}?name=settings-refused`);
  assert.deepEqual(listed.body.result, [], "a refused create makes no queue");
});

test("queue settings: PATCH changes those given, PUT replaces them all; another account can neither see nor change them", async () => {
  const base = `/accounts/${p.accountId}/queues`;
  const q = (await p.api("POST", base, { queue_name: "updated", settings: { delivery_delay: 10, message_retention_period: 600 } })).body.result;
  const patched = await p.api("PATCH", `${base}/${q.queue_id}`, { queue_name: "updated", settings: { delivery_paused: true } });
  assert.equal(patched.status, 200, JSON.stringify(patched.body));
  assert.deepEqual(patched.body.result.settings, { delivery_delay: 10, delivery_paused: true, message_retention_period: 600 });
  const renamed = await p.api("PATCH", `${base}/${q.queue_id}`, { queue_name: "updated-2" });
  assert.deepEqual([renamed.body.result.queue_name, renamed.body.result.settings.delivery_paused], ["updated-2", true]);
  const replaced = await p.api("PUT", `${base}/${q.queue_id}`, { queue_name: "updated-2", settings: { message_retention_period: 120 } });
  assert.deepEqual(replaced.body.result.settings, { delivery_delay: 0, delivery_paused: false, message_retention_period: 120 });
  const bad = await p.api("PATCH", `${base}/${q.queue_id}`, { settings: { message_retention_period: 30 } });
  assert.equal(bad.status, 400);

  // Account B: its own credentials on A's queue id under its own account, and on A's account.
  for (const method of ["PATCH", "PUT"] as const) {
    const theirs = await p.api(method, `/accounts/${accountB}/queues/${q.queue_id}`, { settings: { delivery_paused: true } }, p.keyHeaders());
    assert.equal(theirs.status, 404, method);
    assert.equal(theirs.body.success, false);
  }
  await assert.rejects(cfB.queues.edit(q.queue_id, { account_id: p.accountId, settings: { delivery_paused: true } }), status(403));
  const after = await p.api("GET", `${base}/${q.queue_id}`);
  assert.deepEqual(after.body.result.settings, { delivery_delay: 0, delivery_paused: false, message_retention_period: 120 });
});

test("delivery delay and pause over HTTP: a queue's delay holds a push back unless the message names its own; a paused queue pulls nothing", async () => {
  const account_id = p.accountId;
  const base = `/accounts/${account_id}/queues`;
  const q = (await p.api("POST", base, { queue_name: "held-back", settings: { delivery_delay: 3600 } })).body.result;
  await cf.queues.consumers.create(q.queue_id, { account_id, type: "http_pull", settings: { visibility_timeout_ms: 60_000 } } as never);
  await cf.queues.messages.push(q.queue_id, { account_id, body: "queue-delay", content_type: "text" });
  await cf.queues.messages.bulkPush(q.queue_id, { account_id, messages: [{ body: "batch-delay", content_type: "text" }], delay_seconds: 3600 } as never);
  await cf.queues.messages.push(q.queue_id, { account_id, body: "own-delay", content_type: "text", delay_seconds: 0 } as never);
  const pull = async () =>
    ((await cf.queues.messages.pull(q.queue_id, { account_id, batch_size: 10 })) as { messages: { body: string; lease_id: string }[] }).messages;
  const first = await pull();
  assert.deepEqual(
    first.map((m) => m.body),
    ["own-delay"],
  );
  await cf.queues.messages.ack(q.queue_id, { account_id, retries: [{ lease_id: first[0]!.lease_id, delay_seconds: 0 }] });

  await p.api("PATCH", `${base}/${q.queue_id}`, { settings: { delivery_paused: true } });
  assert.deepEqual(await pull(), [], "paused");
  assert.equal(((await cf.queues.getMetrics(q.queue_id, { account_id })) as { backlog_count: number }).backlog_count, 3, "sends are kept");
  await p.api("PATCH", `${base}/${q.queue_id}`, { settings: { delivery_paused: false } });
  assert.deepEqual(
    (await pull()).map((m) => m.body),
    ["own-delay"],
  );
});
