import assert from "node:assert/strict";
import { after, test } from "node:test";
import { startTestPlatform, type TestPlatform } from "../../core/testing/platform.js";
import { eventually } from "../../core/testing/eventually.js";

// At-least-once across a crash: an object change committed while its queue cannot take the message (a backlog cap of
// one byte) leaves the message in R2's outbox; the platform is killed (SIGKILL), started again on the same state
// directory without the cap, and the message reaches the queue, where an HTTP pull consumer reads it.
const platforms: TestPlatform[] = [];
after(async () => {
  for (const p of platforms.reverse()) await p.dispose().catch(() => undefined);
});

const start = async (args: string[], again?: TestPlatform) => {
  const p = await startTestPlatform({
    ...(again && { stateDir: again.stateDir, credentials: { accountId: again.accountId, email: again.email, apiKey: again.apiKey, token: again.token } }),
    args: ["--dns-port", "0", ...args],
  });
  platforms.push(p);
  return p;
};

test("a notification recorded with its change survives a kill -9 before the queue took it", async () => {
  let p = await start(["--queue-backlog-max-bytes", "1"]);
  const A = p.accountId;
  assert.equal((await p.api("POST", `/accounts/${A}/r2/buckets`, { name: "crashy" })).status, 200);
  const queueId = (await p.api("POST", `/accounts/${A}/queues`, { queue_name: "crashy-q" })).body.result.queue_id as string;
  assert.equal((await p.api("POST", `/accounts/${A}/queues/${queueId}/consumers`, { type: "http_pull" })).status, 200);
  const rule = await p.api("PUT", `/accounts/${A}/event_notifications/r2/crashy/configuration/queues/${queueId}`, { rules: [{ actions: ["PutObject"] }] });
  assert.equal(rule.status, 200, JSON.stringify(rule.body));

  const put = await p.api("PUT", `/accounts/${A}/r2/buckets/crashy/objects/kept.txt`, "kept");
  assert.equal(put.status, 200, JSON.stringify(put.body));
  // The relay tried and the queue refused (its cap): the message is not in the queue.
  await eventually(() => p.logs().includes("queue did not take the messages"), "the relay's refused send");
  const before = await p.api("POST", `/accounts/${A}/queues/${queueId}/messages/pull`, { batch_size: 10 });
  assert.deepEqual(before.body.result.messages, []);
  p.process.kill("SIGKILL");
  await new Promise((r) => p.process.once("exit", r));

  p = await start([], p);
  let bodies: string[] = [];
  // The killed relay's lease (30 s) runs out first.
  await eventually(
    async () => {
      const pulled = await p.api("POST", `/accounts/${A}/queues/${queueId}/messages/pull`, { batch_size: 10 });
      bodies = (pulled.body.result.messages as { body: string }[]).map((m) => m.body);
      return bodies.length > 0;
    },
    "the message after the restart",
    120_000,
  );
  assert.equal(bodies.length, 1);
  const body = JSON.parse(bodies[0]!);
  assert.deepEqual(
    { ...body, eventTime: undefined },
    {
      account: A,
      action: "PutObject",
      bucket: "crashy",
      object: { key: "kept.txt", size: 6, eTag: put.body.result.etag },
      eventTime: undefined,
    },
  );
});
