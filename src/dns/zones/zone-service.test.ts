import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { BlockList } from "node:net";
import { EdgeError } from "../../core/errors.js";
import { openDatabase } from "../../core/db/sqlite.js";
import { sqliteStoreFactory } from "../../core/testing/contract.js";
import { DnsCodes } from "../errors.js";
import { buildRecord } from "../records/input.js";
import { DNS_MIGRATIONS } from "../sqlite-migrations.js";
import { SqliteDnsStore } from "../sqlite-store.js";
import type { DnsStore } from "../store.js";
import { ZoneService } from "./zone-service.js";

const openStore = sqliteStoreFactory(DNS_MIGRATIONS, (db) => new SqliteDnsStore(db));
const ACCOUNT = "a".repeat(32);
const platform = new BlockList();

/** The SQLite store with every write held back a few milliseconds, as a store on a database server would be. */
function slowWrites(store: DnsStore): DnsStore {
  const later = <T>(write: () => Promise<T>) => new Promise<T>((resolve, reject) => setTimeout(() => write().then(resolve, reject), 5));
  return {
    listZones: () => store.listZones(),
    getZone: (id) => store.getZone(id),
    zoneIdsNamed: (names) => store.zoneIdsNamed(names),
    listRecords: (zoneId, page) => store.listRecords(zoneId, page),
    accountSettings: (accountId) => store.accountSettings(accountId),
    createZone: (zone) => later(() => store.createZone(zone)),
    updateZone: (zone, changes, condition) => later(() => store.updateZone(zone, changes, condition)),
    deleteZone: (id) => later(() => store.deleteZone(id)),
    putAccountSettings: (accountId, s) => later(() => store.putAccountSettings(accountId, s)),
  };
}

describe("the zone service over an asynchronous store", () => {
  it("runs writes one at a time: of two requests that conflict, one is refused, and the serial counts each change", async () => {
    const { store, close } = await openStore();
    try {
      const zones = new ZoneService(slowWrites(store));
      await zones.load();
      const zs = await zones.createZone(ACCOUNT, "race.example");
      const add = (body: Record<string, unknown>) => zones.editRecords(zs, (draft) => buildRecord(zones, draft, body, "create", { platform }));
      // Both are checked against the zone before either is written: without one write at a time, both would pass.
      const results = await Promise.allSettled([
        add({ type: "CNAME", name: "www", content: "target.example.org" }),
        add({ type: "A", name: "www", content: "203.0.113.1" }),
        add({ type: "TXT", name: "txt", content: "one" }),
        add({ type: "TXT", name: "txt", content: "two" }),
      ]);
      assert.deepEqual(
        results.map((r) => r.status),
        ["fulfilled", "rejected", "fulfilled", "fulfilled"],
      );
      const refusal = (results[1] as PromiseRejectedResult).reason;
      assert.ok(refusal instanceof EdgeError && refusal.errors[0].code === DnsCodes.cnameExists, String(refusal));
      assert.deepEqual([...zs.records.values()].map((r) => r.type).sort(), ["CNAME", "TXT", "TXT"]);
      const stored = await store.getZone(zs.zone.id);
      assert.equal(stored!.serial, zs.zone.serial, "the store and the index agree on the serial");

      // Two zones of one name asked for at once: one is made.
      const twins = await Promise.allSettled([zones.createZone(ACCOUNT, "twin.example"), zones.createZone(ACCOUNT, "twin.example")]);
      assert.deepEqual(
        twins.map((r) => r.status),
        ["fulfilled", "rejected"],
      );
      // A write that waited for a zone deleted meanwhile finds it gone.
      const deleted = zones.deleteZone(zs);
      const late = add({ type: "TXT", name: "late", content: "x" });
      await deleted;
      await assert.rejects(late, (e: unknown) => e instanceof EdgeError && e.errors[0].code === DnsCodes.invalidZone);
      assert.equal(zones.named("race.example"), undefined);
    } finally {
      await close();
    }
  });

  it("owns each zone's serving state: a withheld zone stays withheld until served again, and its mark ends with it", async () => {
    const { store, close } = await openStore();
    try {
      const zones = new ZoneService(store);
      await zones.load();
      const zs = await zones.createZone(ACCOUNT, "withheld.example");
      const other = await zones.createZone(ACCOUNT, "other.example");
      assert.equal(zones.serving.isServed(zs.zone.id), true, "a zone is served unless withheld");
      assert.equal(zones.serving.setServed(zs.zone.id, false), true, "withholding it is a change");
      assert.equal(zones.serving.setServed(zs.zone.id, false), false, "withholding it again is none");
      assert.equal(zones.serving.isServed(zs.zone.id), false);
      assert.equal(zones.serving.isServed(other.zone.id), true, "other zones stay served");
      await zones.deleteZone(zs);
      assert.equal(zones.serving.setServed(zs.zone.id, true), false, "the deleted zone's mark went with it");
    } finally {
      await close();
    }
  });

  it("loads every zone and all its records, in creation order, across the store's pages", async () => {
    const { store, close } = await openStore();
    try {
      const first = new ZoneService(store);
      await first.load();
      const zs = await first.createZone(ACCOUNT, "big.example");
      const bodies = Array.from({ length: 2500 }, (_, i) => ({ type: "TXT", name: `r${i}`, content: `v${i}` }));
      await first.editRecords(zs, (draft) => bodies.forEach((b) => buildRecord(first, draft, b, "create", { platform })));
      await first.createZone(ACCOUNT, "small.example");

      const again = new ZoneService(store);
      await again.load();
      const loaded = again.named("big.example")!;
      // Records made in the same millisecond (one import) come back ordered by id after their creation time.
      const byCreation = [...zs.records.values()].sort((x, y) =>
        x.created_on === y.created_on ? (x.id < y.id ? -1 : 1) : x.created_on < y.created_on ? -1 : 1,
      );
      assert.equal(loaded.records.size, 2500);
      assert.deepEqual([...loaded.records.values()], byCreation);
      assert.deepEqual(loaded.zone, zs.zone);
      assert.equal(again.named("small.example")?.records.size, 0);
      assert.equal(again.zoneFor("r7.big.example"), loaded);
    } finally {
      await close();
    }
  });
  it("gives up with a 409 the SDKs retry when the zone changes under every attempt, having written nothing", async () => {
    const { store, close } = await openStore();
    try {
      // Another writer (a node of the platform) bumps the serial just before each of this service's writes.
      let attempts = 0;
      const contended: DnsStore = {
        ...slowWrites(store),
        updateZone: async (zone, changes, condition) => {
          attempts++;
          const stored = (await store.getZone(zone.id))!;
          await store.updateZone({ ...stored, serial: stored.serial + 1 });
          return store.updateZone(zone, changes, condition);
        },
      };
      const zones = new ZoneService(contended);
      await zones.load();
      const zs = await zones.createZone(ACCOUNT, "busy.example");
      await assert.rejects(
        zones.editRecords(zs, (draft) => buildRecord(zones, draft, { type: "TXT", name: "x", content: "x" }, "create", { platform })),
        (e: unknown) => e instanceof EdgeError && e.status === 409 && e.errors[0].code === DnsCodes.zoneBusy,
      );
      assert.equal(attempts, 5);
      assert.equal((await store.listRecords(zs.zone.id)).records.length, 0);
      assert.equal(zs.zone.serial, (await store.getZone(zs.zone.id))!.serial - 1, "each attempt reloaded the zone first");
    } finally {
      await close();
    }
  });

  it("holds each zone to the record limit: a node with a stale copy is refused once it reloads, a secondary's transfer past it keeps the old version", async () => {
    const { store, close } = await openStore();
    try {
      // Two nodes on one store: the second's copy of the zone is stale when it writes.
      const one = new ZoneService(store, { maxRecordsPerZone: 3 });
      await one.load();
      const zs = await one.createZone(ACCOUNT, "limit.example");
      const two = new ZoneService(store, { maxRecordsPerZone: 3 });
      await two.load();
      const add = (zones: ZoneService, names: string[]) =>
        zones.editRecords(zones.get(zs.zone.id)!, (draft) =>
          names.map((name) => buildRecord(zones, draft, { type: "TXT", name, content: name }, "create", { platform })),
        );
      await add(one, ["a", "b"]);
      const quota = (e: unknown) => e instanceof EdgeError && e.errors[0].code === DnsCodes.recordQuota;
      // Node two still sees an empty zone: two records fit there, not in the store.
      await assert.rejects(add(two, ["c", "d"]), quota);
      assert.equal((await store.listRecords(zs.zone.id)).records.length, 2);
      await add(two, ["c"]);
      assert.equal(two.get(zs.zone.id)!.records.size, 3);

      const secondary = await one.createZone(ACCOUNT, "copy.example", "secondary");
      const txt = (name: string) => ({
        ...[...zs.records.values()][0],
        id: `${name}`.padEnd(32, "0"),
        zone_id: secondary.zone.id,
        name: `${name}.copy.example`,
      });
      const soa = secondary.zone.settings.soa;
      await one.replaceSecondary(secondary, { serial: 1, soa }, { upserts: [txt("a"), txt("b")], deletes: [] });
      await assert.rejects(one.replaceSecondary(secondary, { serial: 2, soa }, { upserts: [txt("c"), txt("d")], deletes: [] }), quota);
      assert.equal(secondary.zone.serial, 1);
      assert.deepEqual([...secondary.records.keys()].sort(), [txt("a").id, txt("b").id]);
      assert.equal((await store.listRecords(secondary.zone.id)).records.length, 2);
    } finally {
      await close();
    }
  });

  it("catches up on a zone another node made before its notice arrives: by id, by name, with its records; unknown ones stay unknown", async () => {
    const { store, close } = await openStore();
    try {
      // Two nodes on one store, no bus between them: node two hears nothing of what node one makes.
      const one = new ZoneService(store);
      const two = new ZoneService(store);
      await one.load();
      await two.load();
      const made = await one.createZone(ACCOUNT, "fresh.example");
      await one.editRecords(made, (draft) => [buildRecord(one, draft, { type: "TXT", name: "t", content: "x" }, "create", { platform })]);
      const other = await one.createZone(ACCOUNT, "named.example");
      assert.equal(two.get(made.zone.id), undefined);

      const caught = await two.catchUp(made.zone.id);
      assert.equal(caught?.zone.name, "fresh.example");
      assert.equal(caught?.zone.serial, made.zone.serial);
      assert.deepEqual([...caught!.records.keys()], [...made.records.keys()]);
      assert.equal(two.zoneFor("www.fresh.example"), caught);
      // A known zone is the same object: catching up again reads nothing new and replaces nothing.
      assert.equal(await two.catchUp(made.zone.id), caught);

      assert.equal(two.named("named.example"), undefined);
      await two.catchUpNamed(["a.b.named.example", "b.named.example", "named.example", "example"]);
      assert.equal(two.named("named.example")?.zone.id, other.zone.id);

      assert.equal(await two.catchUp("f".repeat(32)), undefined);
      await two.catchUpNamed(["nothing.example"]);
      assert.equal(two.named("nothing.example"), undefined);
    } finally {
      await close();
    }
  });

  it("counts the records of zones stored before the count was kept (migration 3)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "edge-dns-count-"));
    try {
      const file = join(dir, "dns.sqlite");
      const old = openDatabase(file, DNS_MIGRATIONS.slice(0, 2));
      old
        .prepare("INSERT INTO zones (id, account_id, name, created_on, modified_on, serial, settings) VALUES ('z', ?, 'old.example', 't', 't', 1, '{}')")
        .run(ACCOUNT);
      for (const id of ["r1", "r2", "r3"])
        old
          .prepare(
            "INSERT INTO records (id, zone_id, name, type, content, ttl, proxied, tags, settings, created_on, modified_on) VALUES (?, 'z', 'x.old.example', 'TXT', 'x', 1, 0, '[]', '{}', 't', 't')",
          )
          .run(id);
      old.close();
      const db = openDatabase(file, DNS_MIGRATIONS);
      const store = new SqliteDnsStore(db);
      const zone = (await store.getZone("z"))!;
      const extra = { ...(await store.listRecords("z")).records[0], id: "r4" };
      await assert.rejects(
        store.updateZone(zone, { upserts: [extra] }, { maxRecords: 3 }),
        (e: unknown) => e instanceof EdgeError && e.errors[0].code === DnsCodes.recordQuota,
      );
      await store.updateZone(zone, { upserts: [extra] }, { maxRecords: 4 });
      db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
