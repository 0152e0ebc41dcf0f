import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test, type TestContext } from "node:test";
import { LocalBus, type BusEvent } from "../core/cluster/bus.js";
import { SecretBox, SecretOpenError } from "../core/secret-box.js";
import { assertPostgresRefusals, testContentStore, testNodeConnections, testPostgres, unreachablePostgres } from "../core/testing/backends.js";
import { testDatabase } from "../core/testing/services.js";
import { WORKERS_PG_MIGRATIONS } from "./pg-migrations.js";
import { PgWorkersStore, WORKERS_AREA } from "./pg-store.js";
import type { ScriptRecord } from "./store.js";
import { describeWorkersStore } from "./store.contract.js";

describeWorkersStore("PostgreSQL + S3", async (t) => {
  const pg = await testPostgres(t, "workers", WORKERS_PG_MIGRATIONS);
  const content = pg && (await testContentStore(t, "workers"));
  return pg && content && { store: new PgWorkersStore(pg, content, SecretBox.fromKey(randomBytes(32)), new LocalBus("test")), close() {} };
});

const A = "a".repeat(32);
const B = "b".repeat(32);

/** Two nodes' stores on one database and bucket, each with its own pool and its own bus (LISTEN/NOTIFY). */
async function twoNodes(t: TestContext, key = randomBytes(32)) {
  const db = await testDatabase(t);
  const content = db && (await testContentStore(t, "workers"));
  if (!db || !content) return undefined;
  const node = async (nodeId: string) => {
    const { pg, bus } = await testNodeConnections(t, db.url, nodeId, "workers", WORKERS_PG_MIGRATIONS);
    const events: BusEvent[] = [];
    bus.subscribe(WORKERS_AREA, (e) => events.push(e));
    return { pg, bus, events, store: new PgWorkersStore(pg, content, SecretBox.fromKey(key), bus) };
  };
  return [await node("node-1"), await node("node-2")] as const;
}

async function script(store: PgWorkersStore, accountId: string, name: string, text: string): Promise<ScriptRecord> {
  const now = new Date().toISOString();
  return {
    accountId,
    name,
    versionId: randomBytes(8).toString("hex"),
    etag: "e",
    mainModule: "index.js",
    compatibilityDate: "2024-09-01",
    compatibilityFlags: [],
    bindings: [],
    modules: [{ name: "index.js", kind: "esModule", ...(await store.writeModule(Buffer.from(text))) }],
    createdOn: now,
    modifiedOn: now,
  };
}

async function until(check: () => boolean, what: string): Promise<void> {
  const end = Date.now() + 30_000;
  while (!check()) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

test("every committed change to a script is announced to the other nodes as `script:<name>` only; a refused change announces nothing", async (t) => {
  const nodes = await twoNodes(t);
  if (!nodes) return;
  const [one, two] = nodes;
  const changes = () => two.events.flatMap((e) => (e.type === "change" ? [`${e.origin} ${e.what}`] : [e.type]));

  await one.store.save(await script(one.store, A, "app", "v1"), [{ name: "TOKEN", text: "secret-value-1" }]);
  await one.store.changeSecret(A, "app", "TOKEN", "secret-value-2", "v-2");
  await one.store.setSchedules(A, "app", ["* * * * *"], 10);
  // Refused: the name is A's. Nothing is committed, so nothing is announced.
  await assert.rejects(one.store.save(await script(one.store, B, "app", "theirs"), []));
  await assert.rejects(one.store.changeSecret(A, "missing", "X", "y", "v"));
  assert.equal(await one.store.changeSecret(A, "app", "ABSENT", undefined, "v-3"), false, "removing a secret that is not there changes nothing");
  await one.store.delete(A, "app");
  await until(() => changes().length >= 4, "four notices on node two");
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.deepEqual(changes(), ["node-1 script:app", "node-1 script:app", "node-1 script:app", "node-1 script:app"]);
  assert.ok(!JSON.stringify(two.events).includes("secret-value"), "a notice never carries data");
  assert.equal(one.events.length, 4, "the node that made the change hears its own notices too (and skips them by origin)");
});

test("a tick claimed by two nodes at the same moment is won by exactly one of them", async (t) => {
  const nodes = await twoNodes(t);
  if (!nodes) return;
  const [one, two] = nodes;
  await one.store.save(await script(one.store, A, "ticker", "t"), []);
  await one.store.setSchedules(A, "ticker", ["* * * * *"], 10);
  const schedule = { accountId: A, script: "ticker", cron: "* * * * *" };
  for (let minute = 1; minute <= 40; minute++) {
    const tick = minute * 60_000;
    const claims = await Promise.all([one.store.claimTick(schedule, tick), two.store.claimTick(schedule, tick), one.store.claimTick(schedule, tick)]);
    assert.equal(claims.filter(Boolean).length, 1, `tick ${minute}: ${claims.join(", ")}`);
  }
});

test("secrets are sealed in their rows with the platform's key; a node with another key refuses to start", async (t) => {
  const nodes = await twoNodes(t);
  if (!nodes) return;
  const [one] = nodes;
  await one.store.save(await script(one.store, A, "sealed", "s"), [{ name: "API_KEY", text: "clear-text-4711" }]);
  const rows = await one.pg.rows<{ value: string }>("SELECT value FROM workers.secrets");
  assert.equal(rows.length, 1);
  assert.ok(!rows[0]!.value.includes("clear-text-4711"));
  assert.equal((await one.store.secretValues(A, "sealed")).get("API_KEY"), "clear-text-4711");
  await one.store.checkKey();
  const other = new PgWorkersStore(one.pg, undefined as never, SecretBox.fromKey(randomBytes(32)), one.bus);
  await assert.rejects(other.checkKey(), SecretOpenError);
});

test("PostgreSQL unreachable: the store's errors are the core 503 naming PostgreSQL", async (t) => {
  const pg = unreachablePostgres();
  t.after(() => pg.close());
  const store = new PgWorkersStore(pg, undefined as never, SecretBox.fromKey(randomBytes(32)), new LocalBus("test"));
  await assertPostgresRefusals([
    () => store.byName("app"),
    () => store.list(A),
    () => store.changeSecret(A, "app", "S", "v", "v2"),
    () => store.claimTick({ accountId: A, script: "app", cron: "* * * * *" }, 60_000),
  ]);
});
