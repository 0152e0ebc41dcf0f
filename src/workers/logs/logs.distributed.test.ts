import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";
import { eventually } from "../../core/testing/eventually.js";
import { newTestCredentials, startTestPlatform, type TestPlatform } from "../../core/testing/platform.js";
import { awsEnv, testBucket, testDatabase } from "../../core/testing/services.js";
import { createAccount, hit, uploadScript } from "../testing/helpers.js";

/**
 * Workers Logs on two nodes sharing PostgreSQL and a bucket: what a Worker logs on one node is read through the
 * other, and the per-account row cap and the retention hold for the cluster (one account's events counted across
 * both nodes' writes), not per node.
 */

const HANG_GUARD = { timeout: 480_000 };
const MAX_ROWS = 12;

/** One console line an invocation: two events (the invocation's and the line's). */
const WORKER = `export default { fetch(req) { console.log("seen", new URL(req.url).pathname); return new Response("ok"); } };`;

const lastHour = () => ({ from: Date.now() - 3600_000, to: Date.now() + 60_000 });

type Event = { $metadata: { id: string; url?: string; service: string; type: string; account: string } };

/** Every event of an account, read through one node. */
async function eventsOn(node: TestPlatform, account: string, headers?: Record<string, string>) {
  const r = await node.api(
    "POST",
    `/accounts/${account}/workers/observability/telemetry/query`,
    { queryId: "cluster", timeframe: lastHour(), view: "events", limit: 2000 },
    headers,
  );
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.result.events as { events: Event[]; count: number };
}

const paths = (events: Event[]) => events.filter((e) => e.$metadata.type === "cf-worker-event").map((e) => new URL(e.$metadata.url!).pathname);

test(
  "Workers Logs on two nodes: a Worker's logs written on node a are read through node b; the row cap per account and the retention hold across the cluster",
  HANG_GUARD,
  async (t) => {
    const db = await testDatabase(t);
    const bucket = db && (await testBucket(t));
    if (!db || !bucket) return;
    const env = {
      EDGE_DATABASE_URL: db.url,
      EDGE_OBJECT_STORE_URL: bucket.url,
      EDGE_SECRETS_KEY: randomBytes(32).toString("base64"),
      ...awsEnv(bucket.server),
    };
    // 0.001 days: events are removed 86 s after they were logged (checked every 43 s, by either node).
    const args = ["--dns-port", "0", "--workers-logs-max-rows", String(MAX_ROWS), "--workers-logs-retention-days", "0.001"];
    const credentials = newTestCredentials();
    const nodes: TestPlatform[] = [];
    t.after(() => Promise.all(nodes.map((n) => n.dispose())));
    nodes.push(...(await Promise.all([startTestPlatform({ env, credentials, args }), startTestPlatform({ env, credentials, args })])));
    const [a, b] = nodes as [TestPlatform, TestPlatform];

    // Deployed through node a with observability on; invoked on node a; read through node b.
    assert.equal((await uploadScript(a, "logs-cluster", WORKER, { observability: { enabled: true } })).status, 200);
    for (const path of ["/a1", "/a2", "/a3"]) assert.equal((await hit(a, "logs-cluster", path)).status, 200);
    await eventually(async () => paths((await eventsOn(b, a.accountId)).events).length === 3, "node b to read the 3 invocations made on node a", 90_000);
    const throughB = await eventsOn(b, a.accountId);
    assert.deepEqual(paths(throughB.events).sort(), ["/a1", "/a2", "/a3"]);
    assert.equal(throughB.count, 6, JSON.stringify(throughB.events));
    assert.ok(throughB.events.every((e) => e.$metadata.service === "logs-cluster" && e.$metadata.account === a.accountId));

    // Another account's Worker, logged on node b: its events are its own, and the first account's cap leaves them be.
    const other = await createAccount(a, "Logs cluster neighbour");
    const minted = await a.api("POST", "/user/tokens", { name: "logs-cluster-other", permissions: ["workers_edit"], account_id: other }, a.keyHeaders());
    assert.equal(minted.status, 200, JSON.stringify(minted.body));
    const theirs = { authorization: `Bearer ${minted.body.result.value}` };
    assert.equal((await uploadScript(b, "logs-neighbour", WORKER, { observability: { enabled: true } }, { accountId: other, headers: theirs })).status, 200);

    // Both nodes run the first Worker with its logs kept (node b learnt the setting from the bus): invocations on
    // both, 2 events each, 3 × 2 + 5 × 2 + 5 × 2 = 26 written in all for the account, past its cap of 12.
    await eventually(
      async () => {
        await hit(b, "logs-cluster", "/b-probe");
        return paths((await eventsOn(a, a.accountId)).events).includes("/b-probe");
      },
      "node b to keep its invocations of the Worker",
      90_000,
    );
    await eventually(async () => (await hit(b, "logs-neighbour", "/neighbour")).status === 200, "node b to serve the neighbour's Worker", 90_000);
    // The burst comes last, just before its events are looked for: a wait between the two could outlast the 86 s
    // retention on a loaded machine, and the burst would be pruned before it was seen.
    for (let i = 0; i < 5; i++) {
      assert.equal((await hit(a, "logs-cluster", `/burst-a${i}`)).status, 200);
      assert.equal((await hit(b, "logs-cluster", `/burst-b${i}`)).status, 200);
    }
    // Once the newest invocations of both nodes are kept, the account holds at most its cap, the same through both
    // nodes: the oldest went first, whichever node wrote them.
    const newest = ["/burst-a4", "/burst-b4"];
    await eventually(
      async () => {
        const kept = paths((await eventsOn(a, a.accountId)).events);
        return newest.every((p) => kept.includes(p));
      },
      "both nodes' newest invocations kept",
      90_000,
    );
    await eventually(async () => (await eventsOn(a, other, theirs)).count === 2, "the neighbour's invocation kept", 90_000);
    const [viaA, viaB] = [await eventsOn(a, a.accountId), await eventsOn(b, a.accountId)];
    assert.ok(viaA.count <= MAX_ROWS, `${viaA.count} events kept through node a, the cap is ${MAX_ROWS}`);
    assert.deepEqual(
      viaB.events.map((e) => e.$metadata.id),
      viaA.events.map((e) => e.$metadata.id),
    );
    for (const p of newest) assert.ok(paths(viaA.events).includes(p), `${p} kept`);
    for (const p of ["/a1", "/a2", "/a3"]) assert.ok(!paths(viaA.events).includes(p), `${p}, among the oldest, removed`);
    const neighbour = await eventsOn(a, other, theirs);
    assert.deepEqual(paths(neighbour.events), ["/neighbour"]);
    assert.equal(neighbour.count, 2);

    // The retention: every event of both accounts goes, removed by whichever node prunes first.
    await eventually(
      async () => (await eventsOn(a, a.accountId)).count === 0 && (await eventsOn(b, other, theirs)).count === 0,
      "the events removed after the retention, on both nodes",
      240_000,
    );
  },
);
