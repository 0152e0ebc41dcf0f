import assert from "node:assert/strict";
import { randomBytes, randomUUID } from "node:crypto";
import { test, type TestContext } from "node:test";
import { S3Client } from "@aws-sdk/client-s3";
import pg from "pg";
import { LocalBus } from "../core/cluster/bus.js";
import { S3ContentStore } from "../core/content/s3-store.js";
import { Postgres } from "../core/db/postgres.js";
import { SecretBox } from "../core/secret-box.js";
import { newTestCredentials, startTestPlatform, type TestPlatform } from "../core/testing/platform.js";
import { awsEnv, privatePostgres, s3ClientConfig, testBucket, testDatabase } from "../core/testing/services.js";
import { PgWorkersStore } from "./pg-store.js";
import { hit, logEntries, uploadScript, uploadVersion } from "./testing/helpers.js";
import { eventually } from "../core/testing/eventually.js";

const HANG_GUARD = { timeout: 420_000 };

/** A worker answering its version and its TOKEN secret ("-" when it has none). */
const versioned = (version: string) => `export default { fetch(req, env) { return new Response("${version} " + (env.TOKEN ?? "-")); } };`;

/** Polls `check`; the deadline only guards against a hang. */
const until = (check: () => Promise<boolean> | boolean, what: string, deadlineMs = 60_000) => eventually(check, what, deadlineMs);

/** What a worker answers on a node: `<status> <body>`, or the error when the request failed outright. */
const answer = (node: TestPlatform, script: string) =>
  hit(node, script, "/").then(
    (r) => `${r.status} ${r.text}`,
    (err: Error) => `error ${err.message}`,
  );

/**
 * Two nodes on one database (a fresh one on the run's server, or a private server the test may stop) and one bucket,
 * started together; undefined when the test was skipped for a missing service.
 */
async function twoNodes(t: TestContext, opts: { args?: string[]; privateServer?: boolean } = {}) {
  const server = opts.privateServer ? await privatePostgres(t) : undefined;
  const db = opts.privateServer ? server : await testDatabase(t);
  const bucket = db && (await testBucket(t));
  if (!db || !bucket) return undefined;
  const credentials = newTestCredentials();
  const env = { EDGE_DATABASE_URL: db.url, EDGE_OBJECT_STORE_URL: bucket.url, EDGE_SECRETS_KEY: randomBytes(32).toString("base64"), ...awsEnv(bucket.server) };
  const nodes: TestPlatform[] = [];
  t.after(() => Promise.all(nodes.map((n) => n.dispose())));
  nodes.push(...(await Promise.all([startTestPlatform({ env, credentials, args: opts.args }), startTestPlatform({ env, credentials, args: opts.args })])));
  return { a: nodes[0]!, b: nodes[1]!, databaseUrl: db.url, server, bucket };
}

/** The "cron trigger ran" and "already claimed" log entries of `script` on one node, by scheduled time. */
function cronLog(node: TestPlatform, script: string) {
  const entries = logEntries(node).filter((e) => e.script === script && typeof e.scheduled_time === "string");
  const times = (msg: string) => entries.filter((e) => e.msg === msg).map((e) => e.scheduled_time as string);
  return { ran: times("cron trigger ran"), lost: times("cron tick already claimed (by another node, or before a restart)") };
}

test(
  "Workers on two nodes sharing PostgreSQL and a bucket: a deploy, a redeploy under load (nothing dropped), a secret and a delete made on one node are run by the other; a cron tick runs once across both",
  HANG_GUARD,
  async (t) => {
    const nodes = await twoNodes(t, { args: ["--log-level", "debug"] });
    if (!nodes) return;
    const { a, b, databaseUrl, bucket } = nodes;
    const scripts = `/accounts/${a.accountId}/workers/scripts`;

    // The cron trigger first: its tick comes within a minute or two, while the rest of the test runs.
    const ns = await a.api("POST", `/accounts/${a.accountId}/storage/kv/namespaces`, { title: "runs" });
    assert.equal(ns.status, 200);
    const namespaceId: string = ns.body.result.id;
    const ticker = `export default {
      fetch() { return new Response("ticker"); },
      async scheduled(controller, env, ctx) { ctx.waitUntil(env.RUNS.put("run:" + controller.scheduledTime + ":" + crypto.randomUUID(), "1")); },
    };`;
    const up = await uploadScript(a, "ticker", ticker, { bindings: [{ type: "kv_namespace", name: "RUNS", namespace_id: namespaceId }] });
    assert.equal(up.status, 200, JSON.stringify(up.body));
    assert.equal((await a.api("PUT", `${scripts}/ticker/schedules`, [{ cron: "* * * * *" }])).status, 200);

    // A deploy through node a is served by node b.
    assert.equal((await uploadScript(a, "hello", versioned("v1"))).status, 200);
    assert.equal(await answer(a, "hello"), "200 v1 -");
    await until(async () => (await answer(b, "hello")) === "200 v1 -", "node b to serve the version deployed through node a");

    // A redeploy through node a while clients loop against node b: every answer is the old or the new version.
    const seen = new Map<string, number>();
    let newSeen = 0;
    let stop = false;
    const loop = async () => {
      while (!stop) {
        const got = await answer(b, "hello");
        seen.set(got, (seen.get(got) ?? 0) + 1);
        if (got === "200 v2 -") newSeen++;
      }
    };
    const loops = [loop(), loop(), loop()];
    await until(() => (seen.get("200 v1 -") ?? 0) >= 20, "the clients to be served v1 by node b");
    const deployed = Date.now();
    assert.equal((await uploadScript(a, "hello", versioned("v2"))).status, 200);
    const answered = Date.now();
    await until(() => newSeen > 0, "node b to serve v2");
    const propagationMs = Date.now() - answered;
    await until(() => newSeen >= 50, "node b to keep serving v2");
    stop = true;
    await Promise.all(loops);
    t.diagnostic(
      `redeploy: upload answered on node a after ${answered - deployed} ms, node b served v2 ${propagationMs} ms later; answers on node b: ${JSON.stringify([...seen])}`,
    );
    assert.deepEqual(
      [...seen.keys()].filter((k) => k !== "200 v1 -" && k !== "200 v2 -"),
      [],
      "no request to node b failed or got anything but the old or the new version",
    );

    // A secret set through node b is seen by the script on node a (a new version runs there with it).
    const secret = await b.api("PUT", `${scripts}/hello/secrets`, { name: "TOKEN", text: "set-on-b", type: "secret_text" });
    assert.equal(secret.status, 200, JSON.stringify(secret.body));
    await until(async () => (await answer(a, "hello")) === "200 v2 set-on-b", "node a to run the script with the secret set through node b");
    assert.equal(await answer(b, "hello"), "200 v2 set-on-b");

    // A delete through node b stops the script on node a.
    assert.equal((await b.api("DELETE", `${scripts}/hello`)).status, 200);
    await until(async () => (await answer(a, "hello")).startsWith("404"), "node a to stop serving the deleted script");

    // A change whose notice was lost (written as a node would, but announced on a bus no one hears): once their
    // notice connections drop and come back, both nodes resync and run it.
    const quietDb = new Postgres({ url: databaseUrl, poolSize: 2 });
    const s3 = new S3Client(s3ClientConfig(bucket.server));
    t.after(async () => (s3.destroy(), await quietDb.close()));
    const quiet = new PgWorkersStore(quietDb, new S3ContentStore(s3, bucket.name, "workers/"), SecretBox.fromKey(randomBytes(32)), new LocalBus("silent"));
    const now = new Date().toISOString();
    await quiet.save(
      {
        accountId: a.accountId,
        name: "unannounced",
        versionId: randomUUID(),
        etag: "e",
        mainModule: "index.js",
        compatibilityDate: "2024-09-01",
        compatibilityFlags: [],
        bindings: [],
        modules: [{ name: "index.js", kind: "esModule", ...(await quiet.writeModule(Buffer.from(versioned("quiet")))) }],
        createdOn: now,
        modifiedOn: now,
      },
      [],
    );
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    for (const node of [a, b]) assert.match(await answer(node, "unannounced"), /^404 /, "without a notice no node knows of it yet");
    // The run's server is shared by other files' nodes: only this database's bus connections are dropped.
    const dropped = await quietDb.execute(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE 'edge-bus %' AND datname = current_database()",
    );
    assert.equal(dropped, 2, "both nodes' notice connections");
    for (const node of [a, b]) await until(async () => (await answer(node, "unannounced")) === "200 quiet -", "the node to resync and run the script");

    // The cron tick: find one both nodes' clocks went for (a tick right after the trigger was set may have reached
    // only one of them), then check it ran once: one "ran" across both nodes, one lost claim, one KV write.
    assert.equal(await answer(b, "ticker"), "200 ticker", "node b runs the ticker too");
    let tick: string | undefined;
    await until(
      () => {
        const [la, lb] = [cronLog(a, "ticker"), cronLog(b, "ticker")];
        tick = [...la.ran, ...lb.ran].find((time) => la.lost.includes(time) || lb.lost.includes(time));
        return tick !== undefined;
      },
      "a cron tick both nodes tried to claim",
      150_000,
    );
    const ranOn = [a, b].flatMap((node, i) =>
      cronLog(node, "ticker")
        .ran.filter((time) => time === tick)
        .map(() => i),
    );
    assert.equal(ranOn.length, 1, `tick ${tick} ran once across both nodes (ran on ${JSON.stringify(ranOn)})`);
    const scheduledTime = Date.parse(tick!);
    await until(
      async () =>
        (await a.api("GET", `/accounts/${a.accountId}/storage/kv/namespaces/${namespaceId}/keys?prefix=run:${scheduledTime}:`)).body.result.length > 0,
      "the tick's KV write",
    );
    const runs = await b.api("GET", `/accounts/${a.accountId}/storage/kv/namespaces/${namespaceId}/keys?prefix=run:${scheduledTime}:`);
    assert.equal(runs.body.result.length, 1, "scheduled() ran once for the tick");
  },
);

test(
  "PostgreSQL stopped: the Workers API answers 503 on both nodes while their workers keep serving; started again: both recover and follow each other's deploys",
  HANG_GUARD,
  async (t) => {
    const nodes = await twoNodes(t, { privateServer: true });
    if (!nodes) return;
    const { a, b, server } = nodes;
    const scripts = `/accounts/${a.accountId}/workers/scripts`;
    assert.equal((await uploadScript(a, "steady", versioned("v1"))).status, 200);
    await until(async () => (await answer(b, "steady")) === "200 v1 -", "node b to serve the script");

    server!.stop();
    for (const node of [a, b]) {
      const listed = await node.api("GET", scripts);
      assert.equal(listed.status, 503);
      assert.deepEqual(listed.body.errors, [
        { code: 10002, message: "PostgreSQL is unreachable from this node; the request was not carried out, retry it later" },
      ]);
      const upload = await uploadScript(node, "steady", versioned("v-lost"));
      assert.equal(upload.status, 503, "a deploy is refused, not half done");
      for (let i = 0; i < 20; i++) assert.equal(await answer(node, "steady"), "200 v1 -", "the deployed worker keeps serving");
    }

    await server!.start();
    await until(async () => (await a.api("GET", scripts)).status === 200 && (await b.api("GET", scripts)).status === 200, "the API to answer again");
    const listed = await a.api("GET", scripts);
    assert.deepEqual(
      listed.body.result.map((s: { id: string }) => s.id),
      ["steady"],
    );
    // Node b's notices flow again (its bus reconnected by itself): a deploy through node a reaches it.
    assert.equal((await uploadScript(a, "steady", versioned("v2"))).status, 200);
    await until(async () => (await answer(b, "steady")) === "200 v2 -", "node b to serve the deploy made after the recovery");
    assert.equal(await answer(a, "steady"), "200 v2 -");
  },
);

test(
  "a commit that fails after the new version started on the node (the script's row locked past the statement timeout) answers 503 and puts the stored version back",
  HANG_GUARD,
  async (t) => {
    const db = await testDatabase(t);
    if (!db) return;
    const node = await startTestPlatform({ env: { EDGE_DATABASE_URL: db.url, EDGE_SECRETS_KEY: randomBytes(32).toString("base64") } });
    t.after(() => node.dispose());
    assert.equal((await uploadScript(node, "locked", versioned("v1"))).status, 200);
    assert.equal(await answer(node, "locked"), "200 v1 -");

    // Another session holds the script's row: the upload's commit waits for it until PostgreSQL cancels the statement.
    const holder = new pg.Client({ connectionString: db.url });
    await holder.connect();
    let upload: Awaited<ReturnType<typeof uploadScript>>;
    try {
      await holder.query("BEGIN");
      await holder.query("SELECT 1 FROM workers.scripts WHERE name = 'locked' FOR UPDATE");
      upload = await uploadScript(node, "locked", versioned("v2"));
      await holder.query("ROLLBACK");
    } finally {
      await holder.end();
    }
    assert.equal(upload.status, 503, JSON.stringify(upload.body));
    assert.equal(await answer(node, "locked"), "200 v1 -", "the node runs the stored version again, not the one that was not committed");
    assert.equal((await node.api("GET", `/accounts/${node.accountId}/workers/scripts`)).body.result.length, 1);
  },
);

test(
  "a gradual deployment made through one node is run by the other: both versions answer there, the override header picks one, a version key lands on the same version on both nodes, and one version at 100% ends it",
  HANG_GUARD,
  async (t) => {
    const nodes = await twoNodes(t);
    if (!nodes) return;
    const { a, b } = nodes;
    const scripts = `/accounts/${a.accountId}/workers/scripts`;
    const v1 = (await uploadScript(a, "canary", versioned("v1"))).body.result.deployment_id as string;
    const up2 = await uploadVersion(a, "canary", versioned("v2"));
    assert.equal(up2.status, 200, JSON.stringify(up2.body));
    const v2: string = up2.body.result.id;
    await until(async () => (await answer(b, "canary")) === "200 v1 -", "node b to serve v1");
    const split = await a.api("POST", `${scripts}/canary/deployments`, {
      strategy: "percentage",
      versions: [
        { version_id: v1, percentage: 50 },
        { version_id: v2, percentage: 50 },
      ],
    });
    assert.equal(split.status, 200, JSON.stringify(split.body));
    // Node b follows the notice; polled until both versions answered there a few times (the deadline only guards a hang).
    const seen = new Map<string, number>();
    await until(async () => {
      const got = await answer(b, "canary");
      seen.set(got, (seen.get(got) ?? 0) + 1);
      return (seen.get("200 v1 -") ?? 0) >= 5 && (seen.get("200 v2 -") ?? 0) >= 5;
    }, "node b to serve both versions of the split");
    assert.deepEqual([...seen.keys()].sort(), ["200 v1 -", "200 v2 -"]);
    for (let i = 0; i < 10; i++) {
      const r = await hit(b, "canary", "/", { headers: { "Cloudflare-Workers-Version-Overrides": `canary="${v2}"` } });
      assert.equal(`${r.status} ${r.text}`, "200 v2 -");
    }
    // A version key lands on the same version on both nodes (the pick hashes the key alone, not a per-process seed),
    // and keys reach both versions.
    const keyed = async (node: TestPlatform, key: string) => {
      const r = await hit(node, "canary", "/", { headers: { "Cloudflare-Workers-Version-Key": key } });
      return `${r.status} ${r.text}`;
    };
    const byKey = new Set<string>();
    for (let i = 0; i < 20; i++) {
      const key = `user-${i}`;
      const onA = await keyed(a, key);
      for (const node of [a, b, b]) assert.equal(await keyed(node, key), onA, `key ${key} on both nodes`);
      byKey.add(onA);
    }
    assert.deepEqual([...byKey].sort(), ["200 v1 -", "200 v2 -"]);

    const single = await a.api("POST", `${scripts}/canary/deployments`, { strategy: "percentage", versions: [{ version_id: v1, percentage: 100 }] });
    assert.equal(single.status, 200, JSON.stringify(single.body));
    let streak = 0;
    await until(async () => {
      streak = (await answer(b, "canary")) === "200 v1 -" ? streak + 1 : 0;
      return streak >= 30;
    }, "node b to serve v1 alone");
  },
);
