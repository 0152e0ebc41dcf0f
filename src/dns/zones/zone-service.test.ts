import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { BlockList } from "node:net";
import { EdgeError } from "../../core/errors.js";
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
});
