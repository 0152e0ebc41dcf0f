import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { openDatabase } from "../../core/db/sqlite.js";
import { sqliteStoreFactory } from "../../core/testing/contract.js";
import type { DnsRecord, Soa } from "../model.js";
import { DNS_MIGRATIONS } from "../sqlite-migrations.js";
import { SqliteDnsStore } from "../sqlite-store.js";
import { secondaryRecord } from "../transfers/secondary.js";
import { ZoneService } from "./zone-service.js";
import { newId, now } from "./zone-state.js";

const ACCOUNT = "a".repeat(32);
const ZONE = "big.example";
const RECORDS = 30_000;
let dbFile = "";
const openStore = sqliteStoreFactory(DNS_MIGRATIONS, (db, dir) => {
  dbFile = join(dir, "store.sqlite");
  return new SqliteDnsStore(db);
});

const soa = (serial: number): { serial: number; soa: Soa } => ({
  serial,
  soa: { mname: `ns1.${ZONE}`, rname: `hostmaster.${ZONE}`, refresh: 3600, retry: 600, expire: 86400, min_ttl: 300, ttl: 3600 },
});

const record = (zoneId: string, name: string, content: string): DnsRecord =>
  secondaryRecord({ name, type: "A", content, data: null, priority: null, ttl: 300 }, zoneId, newId(), now());

/**
 * A secondary zone's large transfer (ZoneService.replaceSecondary over the SQLite store): written and indexed over
 * many turns of the event loop, during which the zone, in memory and in the store, is only ever the old version or
 * the new one, never a mix; and a transfer that fails half way leaves both as they were.
 */
describe("a large transfer into a secondary zone", () => {
  it("lets the event loop turn while it is applied, and shows only the old version until it is swapped in whole", async () => {
    const { store, close } = await openStore();
    const reader = openDatabase(dbFile, DNS_MIGRATIONS, { readonly: true });
    try {
      const zones = new ZoneService(store);
      await zones.load();
      const zs = await zones.createZone(ACCOUNT, ZONE, "secondary");
      const v1 = Array.from({ length: RECORDS }, (_, i) => record(zs.zone.id, `h${i}.${ZONE}`, "192.0.2.1"));
      await zones.replaceSecondary(zs, soa(1), { upserts: v1, deletes: [] });
      assert.equal(zs.records.size, RECORDS);

      // Version 2: half the records replaced by new names.
      const half = RECORDS / 2;
      const v2 = Array.from({ length: half }, (_, i) => record(zs.zone.id, `new${i}.${ZONE}`, "192.0.2.2"));
      const gone = v1.slice(0, half).map((r) => r.id);
      /** What a query would find, in memory and in the store (another connection, as after a crash), at one moment. */
      const look = () => {
        const stored = reader.prepare("SELECT serial FROM zones WHERE id = ?").get(zs.zone.id) as { serial: number };
        const storedNew = (reader.prepare("SELECT count(*) AS n FROM records WHERE zone_id = ? AND name LIKE 'new%'").get(zs.zone.id) as { n: number }).n;
        const storedOld = (reader.prepare("SELECT count(*) AS n FROM records WHERE zone_id = ? AND name = ?").get(zs.zone.id, `h0.${ZONE}`) as { n: number }).n;
        return {
          memory: [zs.zone.serial, zs.records.size, zs.byName.has(`h0.${ZONE}`), zs.byName.has(`new${half - 1}.${ZONE}`)].join(" "),
          store: [stored.serial, storedOld, storedNew].join(" "),
        };
      };
      const oldVersion = { memory: `1 ${RECORDS} true false`, store: "1 1 0" };
      const newVersion = { memory: `2 ${RECORDS} false true`, store: `2 0 ${half}` };
      const seen: ReturnType<typeof look>[] = [];
      let done = false;
      const watching = (async () => {
        while (!done) {
          seen.push(look());
          await new Promise((r) => setImmediate(r));
        }
      })();
      await zones.replaceSecondary(zs, soa(2), { upserts: v2, deletes: gone });
      done = true;
      await watching;
      assert.deepEqual(look(), newVersion);
      // Looked at between the chunks of the write and of the index: the loop was never held for the whole transfer.
      assert.ok(seen.length > 3, `the event loop turned ${seen.length} times during the transfer`);
      for (const s of seen) {
        assert.ok([oldVersion.memory, newVersion.memory].includes(s.memory), `memory mid-transfer: ${s.memory}`);
        assert.ok([oldVersion.store, newVersion.store].includes(s.store), `store mid-transfer: ${s.store}`);
      }
      assert.ok(
        seen.some((s) => s.memory === oldVersion.memory),
        "queries during the transfer are answered from the old version",
      );

      // A transfer whose last record cannot be written: nothing of it stays, in the store or in memory.
      const bad = Array.from({ length: 5000 }, (_, i) => record(zs.zone.id, `bad${i}.${ZONE}`, "192.0.2.3"));
      bad.push({ ...record(zs.zone.id, `last.${ZONE}`, "192.0.2.3"), zone_id: "f".repeat(32) });
      await assert.rejects(zones.replaceSecondary(zs, soa(3), { upserts: bad, deletes: v2.map((r) => r.id) }), /does not belong to zone/);
      assert.deepEqual(look(), newVersion);
      assert.equal((reader.prepare("SELECT count(*) AS n FROM records WHERE name LIKE 'bad%'").get() as { n: number }).n, 0);
      // And the store takes the next write (the failed transaction did not leave the connection inside it).
      await zones.replaceSecondary(zs, soa(4), { upserts: [record(zs.zone.id, `after.${ZONE}`, "192.0.2.4")], deletes: [] });
      assert.equal((reader.prepare("SELECT serial FROM zones WHERE id = ?").get(zs.zone.id) as { serial: number }).serial, 4);
    } finally {
      reader.close();
      close();
    }
  });
});
