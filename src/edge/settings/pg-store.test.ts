import assert from "node:assert/strict";
import { test } from "node:test";
import { LocalBus, type BusEvent } from "../../core/cluster/bus.js";
import { testPostgres } from "../../core/testing/backends.js";
import { SETTINGS_PG_MIGRATIONS } from "./pg-migrations.js";
import { PgZoneSettingsStore, SETTINGS_AREA } from "./pg-store.js";
import { describeZoneSettingsStore } from "./store.contract.js";

describeZoneSettingsStore("PostgreSQL", async (t) => {
  const pg = await testPostgres(t, SETTINGS_AREA, SETTINGS_PG_MIGRATIONS);
  return pg && { store: new PgZoneSettingsStore(pg, new LocalBus("test")), close() {} };
});

test("PostgreSQL ZoneSettingsStore: a change announces each zone it touched; a delete of nothing announces nothing", async (t) => {
  const pg = await testPostgres(t, SETTINGS_AREA, SETTINGS_PG_MIGRATIONS);
  if (!pg) return t.skip("no PostgreSQL");
  const bus = new LocalBus("node-a");
  const events: BusEvent[] = [];
  bus.subscribe(SETTINGS_AREA, (e) => events.push(e));
  const store = new PgZoneSettingsStore(pg, bus);
  const A = "a".repeat(32);
  await store.put([
    { zoneId: "z1", accountId: A, id: "ssl", value: "full", modifiedOn: 1 },
    { zoneId: "z1", accountId: A, id: "websockets", value: "off", modifiedOn: 1 },
  ]);
  await store.deleteZone("z2");
  await store.deleteZone("z1");
  assert.deepEqual(
    events.map((e) => (e.type === "change" ? e.what : e.type)),
    ["zone:z1", "zone:z1"],
  );
});
