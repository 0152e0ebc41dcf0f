import assert from "node:assert/strict";
import { test } from "node:test";
import { LocalBus, type BusEvent } from "../../core/cluster/bus.js";
import { testPostgres } from "../../core/testing/backends.js";
import { RULES_PG_MIGRATIONS } from "./pg-migrations.js";
import { PgCacheRulesStore, RULES_AREA } from "./pg-store.js";
import { describeCacheRulesStore } from "./store.contract.js";

describeCacheRulesStore("PostgreSQL", async (t) => {
  const pg = await testPostgres(t, RULES_AREA, RULES_PG_MIGRATIONS);
  return pg && { store: new PgCacheRulesStore(pg, new LocalBus("test")), close() {} };
});

test("PostgreSQL CacheRulesStore: a write announces its zone; a write that lost or a delete of nothing announces nothing", async (t) => {
  const pg = await testPostgres(t, RULES_AREA, RULES_PG_MIGRATIONS);
  if (!pg) return t.skip("no PostgreSQL");
  const bus = new LocalBus("node-a");
  const events: BusEvent[] = [];
  bus.subscribe(RULES_AREA, (e) => events.push(e));
  const store = new PgCacheRulesStore(pg, bus);
  const ruleset = {
    id: "1".repeat(32),
    name: "default",
    description: "",
    kind: "zone",
    phase: "http_request_cache_settings",
    version: "1",
    last_updated: "x",
    rules: [],
  } as const;
  const row = { zoneId: "z1", accountId: "a".repeat(32), ruleset: { ...ruleset, rules: [] } };
  assert.equal(await store.put(row, undefined), true);
  assert.equal(await store.put(row, undefined), false);
  await store.delete("z2");
  await store.delete("z1");
  assert.deepEqual(
    events.map((e) => (e.type === "change" ? e.what : e.type)),
    ["zone:z1", "zone:z1"],
  );
});
