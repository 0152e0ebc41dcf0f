import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { TestPlatform } from "../../core/testing/platform.js";
import { logEntries, startPlatform, uploadScript, uploadVersion } from "../testing/helpers.js";
import { eventually } from "../../core/testing/eventually.js";

/**
 * Gradual deployments and the invocations that carry no request: a cron tick and a queue batch go to one of the two
 * versions, by their shares, and are handled once.
 */

let p: TestPlatform;
before(async () => {
  p = await startPlatform(["--queue-poll-interval", "0.2"]);
});
after(() => p?.dispose());

/** A version that logs, with its label, every scheduled event and queue message it handles. */
const labelled = (label: string) => `export default {
  fetch() { return new Response(${JSON.stringify(label)}); },
  scheduled(controller) { console.log("SPLIT " + JSON.stringify({ label: ${JSON.stringify(label)}, tick: controller.scheduledTime })); },
  queue(batch) { for (const m of batch.messages) console.log("SPLIT " + JSON.stringify({ label: ${JSON.stringify(label)}, body: m.body, attempts: m.attempts })); },
};`;
/** A version with a fetch() handler only. */
const fetchOnly = `export default { fetch() { return new Response("fetch only"); } };`;

interface Handled {
  label: string;
  tick?: number;
  body?: string;
  attempts?: number;
}

/** What script `name`'s versions logged as handled, in order. */
const handled = (name: string): Handled[] =>
  logEntries(p)
    .filter((e) => e.script === name && typeof e.msg === "string" && e.msg.startsWith("SPLIT "))
    .map((e) => JSON.parse((e.msg as string).slice(6)) as Handled);

const scripts = () => `/accounts/${p.accountId}/workers/scripts`;

/** Uploads a Worker whose live version is "one" (or `firstCode`), and a version "two" of it (or `secondCode`); answers both ids. */
async function twoVersions(name: string, secondCode = labelled("two"), firstCode = labelled("one")): Promise<[string, string]> {
  const up = await uploadScript(p, name, firstCode);
  assert.equal(up.status, 200, JSON.stringify(up.body));
  const second = await uploadVersion(p, name, secondCode);
  assert.equal(second.status, 200, JSON.stringify(second.body));
  return [up.body.result.deployment_id, second.body.result.id];
}

async function deploy(name: string, versions: [string, number][]): Promise<void> {
  const r = await p.api("POST", `${scripts()}/${name}/deployments`, {
    strategy: "percentage",
    versions: versions.map(([version_id, percentage]) => ({ version_id, percentage })),
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
}

test("a cron tick during a split runs once, on the version the shares choose (0%/100% and 100%/0%)", async () => {
  // Two Workers ticking every minute, split opposite ways: one minute's tick checks both.
  const toTwo = await twoVersions("split-cron-two");
  const toOne = await twoVersions("split-cron-one");
  await deploy("split-cron-two", [
    [toTwo[0], 0],
    [toTwo[1], 100],
  ]);
  await deploy("split-cron-one", [
    [toOne[0], 100],
    [toOne[1], 0],
  ]);
  // A split where only one version has scheduled(): the tick runs there rather than being skipped.
  const half = await twoVersions("split-cron-half", fetchOnly);
  await deploy("split-cron-half", [
    [half[0], 50],
    [half[1], 50],
  ]);
  const ticking = ["split-cron-two", "split-cron-one", "split-cron-half"];
  for (const name of ticking) assert.equal((await p.api("PUT", `${scripts()}/${name}/schedules`, [{ cron: "* * * * *" }])).status, 200);

  // The first tick whose run both Workers logged (a minute boundary is at most a minute away, plus a busy machine).
  const ranTicks = (name: string) =>
    new Set(
      logEntries(p)
        .filter((e) => e.script === name && e.msg === "cron trigger ran")
        .map((e) => Date.parse(e.scheduled_time as string)),
    );
  // Each Worker's runs or skips of one tick (a skip is what a version without scheduled() would make of it).
  const triedTicks = (name: string) =>
    new Set(
      logEntries(p)
        .filter((e) => e.script === name && typeof e.scheduled_time === "string" && typeof e.msg === "string" && e.msg.startsWith("cron trigger"))
        .map((e) => Date.parse(e.scheduled_time as string)),
    );
  let tick: number | undefined;
  await eventually(
    () => {
      const [two, half] = [ranTicks("split-cron-two"), triedTicks("split-cron-half")];
      tick = [...ranTicks("split-cron-one")].find((t) => two.has(t) && half.has(t));
      return tick !== undefined;
    },
    "a cron tick all three Workers ran",
    150_000,
  );
  assert.deepEqual(
    handled("split-cron-two").filter((h) => h.tick === tick),
    [{ label: "two", tick }],
    "0%/100%: once, on the second version",
  );
  assert.deepEqual(
    handled("split-cron-one").filter((h) => h.tick === tick),
    [{ label: "one", tick }],
    "100%/0%: once, on the first version",
  );
  assert.deepEqual(
    handled("split-cron-half").filter((h) => h.tick === tick),
    [{ label: "one", tick }],
    "50%/50%, only the first version with scheduled(): once, there",
  );
  for (const name of ticking) assert.equal((await p.api("PUT", `${scripts()}/${name}/schedules`, [])).status, 200);
});

test("queue batches during a split go to the version the shares choose, each message once (0%/100%, 100%/0%, 50%/50%)", async () => {
  const NAME = "split-queue";
  const [v1, v2] = await twoVersions(NAME);
  const queue = await p.api("POST", `/accounts/${p.accountId}/queues`, { queue_name: "split-jobs" });
  assert.equal(queue.status, 200, JSON.stringify(queue.body));
  const queueId: string = queue.body.result.queue_id;
  // One message a batch: each delivery is a pick of its own.
  const consumer = await p.api("POST", `/accounts/${p.accountId}/queues/${queueId}/consumers`, {
    script_name: NAME,
    settings: { batch_size: 1, max_wait_time_ms: 100 },
  });
  assert.equal(consumer.status, 200, JSON.stringify(consumer.body));

  /** Sends `n` messages tagged `tag` and waits until the consumer logged them all; answers the labels that handled them. */
  async function deliver(tag: string, n: number): Promise<string[]> {
    const bodies = Array.from({ length: n }, (_, i) => `${tag}-${i}`);
    const sent = await p.api("POST", `/accounts/${p.accountId}/queues/${queueId}/messages/batch`, {
      messages: bodies.map((body) => ({ body, content_type: "text" })),
    });
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    const mine = () => handled(NAME).filter((h) => h.body?.startsWith(`${tag}-`));
    await eventually(() => new Set(mine().map((h) => h.body)).size === n, `${n} messages ${tag} handled`, 60_000);
    return mine().map((h) => h.label);
  }

  await deploy(NAME, [
    [v1, 0],
    [v2, 100],
  ]);
  assert.deepEqual(new Set(await deliver("to-two", 10)), new Set(["two"]));
  await deploy(NAME, [
    [v1, 100],
    [v2, 0],
  ]);
  assert.deepEqual(new Set(await deliver("to-one", 10)), new Set(["one"]));
  await deploy(NAME, [
    [v1, 50],
    [v2, 50],
  ]);
  const even = await deliver("even", 40);
  assert.ok(even.includes("one") && even.includes("two"), `both versions took batches at 50%/50%: ${even.join(" ")}`);

  // Every message was handled once, by one version (no batch went to both, none was delivered again).
  const bodies = handled(NAME).map((h) => h.body);
  assert.equal(bodies.length, 60);
  assert.equal(new Set(bodies).size, 60);
});

/**
 * A 50%/50% split where only one version has queue() (the primary, the first named on a tie, or the other one):
 * every message is handled by that version at its first attempt.
 */
async function onlyOneConsumes(name: string, which: "primary" | "secondary"): Promise<void> {
  const [v1, v2] = which === "primary" ? await twoVersions(name, fetchOnly) : await twoVersions(name, labelled("two"), fetchOnly);
  await deploy(name, [
    [v1, 50],
    [v2, 50],
  ]);
  const queue = await p.api("POST", `/accounts/${p.accountId}/queues`, { queue_name: `${name}-jobs` });
  assert.equal(queue.status, 200, JSON.stringify(queue.body));
  const queueId: string = queue.body.result.queue_id;
  // max_retries 0: a batch sent to the version without queue() would be given up at once.
  const consumer = await p.api("POST", `/accounts/${p.accountId}/queues/${queueId}/consumers`, {
    script_name: name,
    settings: { batch_size: 1, max_wait_time_ms: 100, max_retries: 0 },
  });
  assert.equal(consumer.status, 200, JSON.stringify(consumer.body));
  const bodies = Array.from({ length: 20 }, (_, i) => `${name}-${i}`);
  const sent = await p.api("POST", `/accounts/${p.accountId}/queues/${queueId}/messages/batch`, {
    messages: bodies.map((body) => ({ body, content_type: "text" })),
  });
  assert.equal(sent.status, 200, JSON.stringify(sent.body));
  const failed = () => logEntries(p).filter((e) => e.script === name && e.msg === "queue() could not be run; the batch is retried");
  await eventually(() => handled(name).length + failed().length >= bodies.length, "20 messages delivered or failed", 60_000);
  assert.deepEqual(failed(), [], "no batch went to the version without queue()");
  const got = handled(name);
  assert.deepEqual(got.map((h) => h.body).sort(), [...bodies].sort(), "every message handled once");
  assert.deepEqual(new Set(got.map((h) => `${h.label} ${h.attempts}`)), new Set([which === "primary" ? "one 1" : "two 1"]));
}

test("a queue batch during a split where only the primary version has queue() goes to it, at the first attempt", async () => {
  await onlyOneConsumes("split-queue-half", "primary");
});

test("a split where only the second version has queue() consumes its queue (readiness looks at both versions)", async () => {
  // The primary (the first named on a tie) is fetch-only: a consumer judged by it alone was never delivered to.
  await onlyOneConsumes("split-queue-other", "secondary");
});
