import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { BlockList } from "node:net";
import { test, type TestContext } from "node:test";
import { PostgresBus, type BusEvent } from "../../core/cluster/bus.js";
import { migrateArea } from "../../core/db/pg-migrations.js";
import { Postgres } from "../../core/db/postgres.js";
import { EdgeError } from "../../core/errors.js";
import { createLogger } from "../../core/logger.js";
import { sqliteStoreFactory } from "../../core/testing/contract.js";
import { testDatabase } from "../../core/testing/services.js";
import { DnsCodes } from "../errors.js";
import { DNS_PG_MIGRATIONS } from "../pg-migrations.js";
import { PgDnsStore } from "../pg-store.js";
import { DNS_MIGRATIONS } from "../sqlite-migrations.js";
import { SqliteDnsStore } from "../sqlite-store.js";
import { buildRecord } from "../records/input.js";
import { ZoneService } from "./zone-service.js";
import { ZoneSync } from "./zone-sync.js";

// Two nodes in one process, each as a node wires them (its own pool, bus, store, zone service and sync), on one
// real PostgreSQL database; what one changes reaches the other only through the database and LISTEN/NOTIFY.

const ACCOUNT = "a".repeat(32);
const platform = new BlockList();
const silent = createLogger({ level: "silent" });
const openSqliteStore = sqliteStoreFactory(DNS_MIGRATIONS, (db) => new SqliteDnsStore(db));

interface Node {
  id: string;
  zones: ZoneService;
  bus: PostgresBus;
  sync?: ZoneSync;
  /** What the node's change listeners were told: "<kind> <origin> <zone name>". */
  events: string[];
}

/** Resolves when `check` holds, polling; the deadline only guards against a hang. */
async function until(check: () => boolean, what: string): Promise<void> {
  const start = Date.now();
  while (!check()) {
    if (Date.now() - start > 30_000) assert.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

async function startNode(t: TestContext, id: string, url: string, opts: { sync?: boolean; busUrl?: string } = {}): Promise<Node> {
  const pg = new Postgres({ url, poolSize: 3 });
  const bus = new PostgresBus(pg, { url: opts.busUrl ?? url, nodeId: id, backoffMs: { first: 20, max: 200 } });
  const zones = new ZoneService(new PgDnsStore(pg, bus));
  const events: string[] = [];
  zones.onChange((zs, kind, origin) => events.push(`${kind} ${origin} ${zs.zone.name}`));
  const sync = opts.sync === false ? undefined : new ZoneSync(zones, bus, silent);
  t.after(async () => {
    sync?.stop();
    await bus.close();
    await pg.close();
  });
  await bus.start();
  await zones.load();
  return { id, zones, bus, sync, events };
}

async function twoNodes(t: TestContext, opts: { bSync?: boolean; bBusUrl?: (url: string) => Promise<string> } = {}) {
  const db = await testDatabase(t);
  if (!db) return undefined;
  const pg = new Postgres({ url: db.url, poolSize: 1 });
  await migrateArea(pg, "dns", DNS_PG_MIGRATIONS);
  await pg.close();
  const a = await startNode(t, "node-a", db.url);
  const b = await startNode(t, "node-b", db.url, { sync: opts.bSync, busUrl: opts.bBusUrl && (await opts.bBusUrl(db.url)) });
  return { db, a, b };
}

const add = (node: Node, zoneName: string, body: Record<string, unknown>) =>
  node.zones.editRecords(node.zones.named(zoneName)!, (draft) => buildRecord(node.zones, draft, body, "create", { platform }));
const contentAt = (node: Node, zoneName: string, name: string) =>
  node.zones
    .named(zoneName)
    ?.at(name)
    .map((r) => `${r.type} ${r.content}`)
    .sort();

test("a zone created and changed through one node is reloaded by the other, serial included; a delete through either removes it from both", async (t) => {
  const nodes = await twoNodes(t);
  if (!nodes) return;
  const { a, b } = nodes;
  const created = await a.zones.createZone(ACCOUNT, "sync.example");
  await until(() => b.zones.named("sync.example") !== undefined, "node b to load the new zone");
  await add(a, "sync.example", { type: "A", name: "www.sync.example", content: "192.0.2.1" });
  await until(() => contentAt(b, "sync.example", "www.sync.example")?.length === 1, "node b to load the record");
  assert.equal(b.zones.named("sync.example")!.zone.serial, created.zone.serial, "both nodes serve the serial stored");
  assert.deepEqual(b.zones.named("sync.example")!.zone, a.zones.named("sync.example")!.zone);

  // A change through b, on the zone object b's requests hold: a reloads it in place.
  const held = a.zones.named("sync.example")!;
  await add(b, "sync.example", { type: "TXT", name: "www.sync.example", content: '"from b"' });
  await until(() => held.at("www.sync.example").length === 2, "node a to load b's record");
  assert.equal(a.zones.named("sync.example"), held);
  assert.equal(held.zone.serial, b.zones.named("sync.example")!.zone.serial);

  await b.zones.deleteZone(b.zones.named("sync.example")!);
  await until(() => a.zones.named("sync.example") === undefined && a.zones.get(created.zone.id) === undefined, "node a to drop the zone");
  assert.deepEqual(a.events, ["created local sync.example", "records local sync.example", "records remote sync.example", "deleted remote sync.example"]);
  assert.deepEqual(b.events, ["created remote sync.example", "records remote sync.example", "records local sync.example", "deleted local sync.example"]);
});

test("a write checked against a zone another node changed since is checked again against what is stored", async (t) => {
  // Node b hears nothing (no sync): its copy of the zone is certainly stale when it writes.
  const nodes = await twoNodes(t, { bSync: false });
  if (!nodes) return;
  const { a, b } = nodes;
  await a.zones.createZone(ACCOUNT, "stale.example");
  await b.zones.reloadAll();
  await add(a, "stale.example", { type: "CNAME", name: "www.stale.example", content: "elsewhere.example" });
  assert.equal(contentAt(b, "stale.example", "www.stale.example")?.length, 0, "node b has not heard of the CNAME");

  // Checked against b's copy alone, this A record would pass and sit beside the CNAME.
  await assert.rejects(
    add(b, "stale.example", { type: "A", name: "www.stale.example", content: "192.0.2.7" }),
    (err: unknown) => err instanceof EdgeError && err.errors[0].code === DnsCodes.cnameExists,
  );
  assert.deepEqual(contentAt(b, "stale.example", "www.stale.example"), ["CNAME elsewhere.example"], "the refusal reloaded the zone");
  await add(b, "stale.example", { type: "TXT", name: "other.stale.example", content: '"ok"' });
  await a.zones.reloadAll();
  assert.deepEqual(contentAt(a, "stale.example", "other.stale.example"), ['TXT "ok"']);
  assert.deepEqual(contentAt(a, "stale.example", "www.stale.example"), ["CNAME elsewhere.example"]);
  assert.equal(a.zones.named("stale.example")!.zone.serial, b.zones.named("stale.example")!.zone.serial);

  // A zone deleted through a is "not found" for b's next write, and gone from b.
  await a.zones.deleteZone(a.zones.named("stale.example")!);
  const held = b.zones.named("stale.example")!;
  await assert.rejects(
    b.zones.editRecords(held, (draft) => buildRecord(b.zones, draft, { type: "TXT", name: "x.stale.example", content: '"x"' }, "create", { platform })),
    (err: unknown) => err instanceof EdgeError && err.status === 404,
  );
  assert.equal(b.zones.named("stale.example"), undefined);
});

test("changes made while a node's notice connection was down are all picked up by the resync when it is back", async (t) => {
  // Node b listens as a role of its own, so the test can keep it from reconnecting while node a makes changes.
  const role = `dns_sync_${randomBytes(4).toString("hex")}`;
  const password = randomBytes(12).toString("hex");
  let admin: Postgres | undefined;
  const nodes = await twoNodes(t, {
    bBusUrl: async (url) => {
      admin = new Postgres({ url, poolSize: 1 });
      await admin.execute(`CREATE ROLE ${role} LOGIN PASSWORD '${password}'`);
      const u = new URL(url);
      u.username = role;
      u.password = password;
      return u.href;
    },
  });
  if (admin) {
    const pool = admin;
    t.after(async () => {
      await pool.execute(`DROP ROLE IF EXISTS ${role}`).catch(() => {});
      await pool.close();
    });
  }
  if (!nodes || !admin) return;
  const { a, b } = nodes;
  await a.zones.createZone(ACCOUNT, "kept.example");
  await a.zones.createZone(ACCOUNT, "doomed.example");
  await until(() => b.zones.named("kept.example") !== undefined && b.zones.named("doomed.example") !== undefined, "node b to load both zones");

  await admin.execute(`ALTER ROLE ${role} NOLOGIN`);
  await admin.execute(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '${role}'`);
  await until(() => !b.bus.connected, "node b's notice connection to be down");
  await add(a, "kept.example", { type: "A", name: "kept.example", content: "192.0.2.9" });
  await a.zones.deleteZone(a.zones.named("doomed.example")!);
  await a.zones.createZone(ACCOUNT, "new.example");
  // Not heard: node b still has what it had.
  assert.ok(b.zones.named("doomed.example"));
  assert.equal(b.zones.named("new.example"), undefined);

  await admin.execute(`ALTER ROLE ${role} LOGIN`);
  await until(
    () =>
      b.zones.named("doomed.example") === undefined && b.zones.named("new.example") !== undefined && contentAt(b, "kept.example", "kept.example")?.length === 1,
    "node b to resync",
  );
  assert.equal(b.zones.named("kept.example")!.zone.serial, a.zones.named("kept.example")!.zone.serial);
  await b.sync!.settled();
});

test("the promise a notice's delivery returns ends with the reload that takes it up, not with reloads of later notices", async () => {
  const { store, close } = await openSqliteStore();
  try {
    const writer = new ZoneService(store);
    await writer.load();
    const zones = new ZoneService({
      ...Object.fromEntries(
        (["listZones", "listRecords", "zoneIdsNamed", "createZone", "updateZone", "deleteZone", "accountSettings", "putAccountSettings"] as const).map((m) => [
          m,
          (store[m] as (...args: unknown[]) => unknown).bind(store),
        ]),
      ),
      // Reading a zone takes 200 ms, or 2.5 s for the slow one: the later notice's reload outlasts the earlier's.
      getZone: async (id: string) => {
        await new Promise((resolve) => setTimeout(resolve, id === slow.zone.id ? 2_500 : 200));
        return store.getZone(id);
      },
    } as typeof store);
    await zones.load();
    const early = await writer.createZone(ACCOUNT, "early.example");
    const slow = await writer.createZone(ACCOUNT, "slow.example");
    let deliver: (event: BusEvent) => unknown = () => undefined;
    const sync = new ZoneSync(zones, { nodeId: "this-node", subscribe: (_area, handler) => ((deliver = handler), () => undefined) }, silent);
    try {
      const earlyApplied = deliver({ type: "change", area: "dns", what: `zone:${early.zone.id}`, origin: "other-node" }) as Promise<void>;
      // The later notice comes while the first reload runs.
      await new Promise((resolve) => setTimeout(resolve, 50));
      const slowApplied = deliver({ type: "change", area: "dns", what: `zone:${slow.zone.id}`, origin: "other-node" }) as Promise<void>;
      await earlyApplied;
      assert.equal(zones.get(early.zone.id)?.zone.name, "early.example", "the earlier notice's zone is here");
      assert.equal(zones.get(slow.zone.id), undefined, "the later notice's reload was not waited for");
      await slowApplied;
      assert.equal(zones.get(slow.zone.id)?.zone.name, "slow.example");
      assert.equal(deliver({ type: "change", area: "dns", what: "zone:x", origin: "this-node" }), undefined, "this node's own notices start nothing");
    } finally {
      sync.stop();
    }
  } finally {
    await close();
  }
});
