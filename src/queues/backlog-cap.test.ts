import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { TestPlatform } from "../core/testing/platform.js";
import { createAccount, hit, startPlatform, uploadScript } from "../workers/testing/helpers.js";
import { QueuesCodes } from "./errors.js";

// The backlog cap on a platform that allows 100 bytes a queue: the v4 API and workerd's own queue binding refuse
// a send past it whole, and one account's full queue leaves another account's queue alone.
const CAP = 100;
let p: TestPlatform;
let accountB: string;
let keyB: Record<string, string>;

const PRODUCER = `
export default {
  async fetch(req, env) {
    const u = new URL(req.url);
    const n = Number(u.searchParams.get("bytes"));
    try {
      if (u.pathname === "/send") await env.Q.send("s".repeat(n), { contentType: "text" });
      else await env.Q.sendBatch([{ body: "a".repeat(n), contentType: "text" }, { body: "b".repeat(n), contentType: "text" }]);
      return Response.json(await env.Q.metrics());
    } catch (e) {
      return new Response(String(e.message), { status: 400 });
    }
  },
};
`;

before(async () => {
  p = await startPlatform(["--queue-backlog-max-bytes", String(CAP)]);
  accountB = await createAccount(p, "queues-cap-b");
  keyB = p.keyHeaders();
});
after(async () => {
  await p?.dispose();
});

async function createQueue(accountId: string, name: string, headers?: Record<string, string>): Promise<string> {
  const r = await p.api("POST", `/accounts/${accountId}/queues`, { queue_name: name }, headers);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.result.queue_id as string;
}

const text = (n: number, c = "x") => ({ body: c.repeat(n), content_type: "text" });

test("v4 API: a push or batch past the cap answers 413 Storage Limit Exceeded and keeps nothing; another account's queue is not touched", async () => {
  const a = p.accountId;
  const qa = await createQueue(a, "capped");
  const qb = await createQueue(accountB, "capped", keyB);
  const push = (accountId: string, q: string, body: unknown, path = "messages", headers?: Record<string, string>) =>
    p.api("POST", `/accounts/${accountId}/queues/${q}/${path}`, body, headers);
  const metrics = async (accountId: string, q: string, headers?: Record<string, string>) =>
    (await p.api("GET", `/accounts/${accountId}/queues/${q}/metrics`, undefined, headers)).body.result;

  assert.equal((await push(a, qa, text(40))).status, 200);
  assert.equal((await push(a, qa, text(40))).status, 200);
  const full = await push(a, qa, text(40));
  assert.equal(full.status, 413, JSON.stringify(full.body));
  assert.equal(full.body.success, false);
  assert.equal(full.body.errors[0].code, QueuesCodes.backlogFull);
  assert.match(full.body.errors[0].message, /^Storage Limit Exceeded\b/);
  const batch = await push(a, qa, { messages: [text(15), text(10)] }, "messages/batch");
  assert.equal(batch.status, 413, "a batch that does not fit is refused whole");
  assert.deepEqual([(await metrics(a, qa)).backlog_count, (await metrics(a, qa)).backlog_bytes], [2, 80]);
  assert.equal((await push(a, qa, { messages: [text(10), text(10)] }, "messages/batch")).status, 200, "a batch that fits exactly");
  assert.deepEqual([(await metrics(a, qa)).backlog_count, (await metrics(a, qa)).backlog_bytes], [4, 100]);

  // Account B's queue of the same name has its own room, A's full queue notwithstanding.
  assert.equal((await push(accountB, qb, text(100), "messages", keyB)).status, 200);
  assert.deepEqual((await metrics(accountB, qb, keyB)).backlog_bytes, 100);
  assert.equal((await push(accountB, qb, text(1), "messages", keyB)).status, 413);

  // A purge frees the room again; the queue's own answer has no backlog field (the hosted one has none either).
  const purged = await p.api("POST", `/accounts/${a}/queues/${qa}/purge`, { delete_messages_permanently: true });
  assert.equal(purged.status, 200, JSON.stringify(purged.body));
  assert.equal((await push(a, qa, text(100))).status, 200);
  const q = (await p.api("GET", `/accounts/${a}/queues/${qa}`)).body.result;
  assert.equal(q.backlog_bytes, undefined);
});

test("workerd's queue binding: send() and sendBatch() past the cap throw Storage Limit Exceeded, and the backlog keeps nothing of them", async () => {
  await createQueue(p.accountId, "bound");
  const up = await uploadScript(p, "cap-producer", PRODUCER, { bindings: [{ type: "queue", name: "Q", queue_name: "bound" }] });
  assert.equal(up.status, 200, JSON.stringify(up.body));
  const sent = await hit(p, "cap-producer", "/send?bytes=60");
  assert.equal(sent.status, 200, sent.text);
  assert.deepEqual(JSON.parse(sent.text).backlogBytes, 60);
  const refused = await hit(p, "cap-producer", "/send?bytes=41");
  assert.equal(refused.status, 400, refused.text);
  assert.match(refused.text, /^Queue send failed: Storage Limit Exceeded\b/);
  const batch = await hit(p, "cap-producer", "/batch?bytes=30");
  assert.equal(batch.status, 400, batch.text);
  assert.match(batch.text, /Storage Limit Exceeded/);
  const fits = await hit(p, "cap-producer", "/batch?bytes=20");
  assert.equal(fits.status, 200, fits.text);
  assert.deepEqual([JSON.parse(fits.text).backlogCount, JSON.parse(fits.text).backlogBytes], [3, 100]);
});
