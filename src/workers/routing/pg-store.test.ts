import assert from "node:assert/strict";
import { test } from "node:test";
import { LocalBus, type BusEvent } from "../../core/cluster/bus.js";
import { testPostgres } from "../../core/testing/backends.js";
import { ROUTES_PG_MIGRATIONS } from "./pg-migrations.js";
import { PgRoutesStore, ROUTES_AREA, ROUTES_CHANGED } from "./pg-store.js";
import { describeRoutesStore } from "./store.contract.js";

describeRoutesStore("PostgreSQL", async (t) => {
  const pg = await testPostgres(t, ROUTES_AREA, ROUTES_PG_MIGRATIONS);
  return pg && { store: new PgRoutesStore(pg, new LocalBus("test")), close() {} };
});

test("PostgreSQL RoutesStore: a committed change sends the notice `routes`; a refused one sends none", async (t) => {
  const pg = await testPostgres(t, ROUTES_AREA, ROUTES_PG_MIGRATIONS);
  if (!pg) return t.skip("no PostgreSQL");
  const bus = new LocalBus("node-a");
  const events: BusEvent[] = [];
  bus.subscribe(ROUTES_AREA, (e) => events.push(e));
  const store = new PgRoutesStore(pg, bus);
  const r = { id: "r1", zoneId: "z", accountId: "a".repeat(32), pattern: "example.com/*", script: "one" };
  await store.addRoute(r);
  await assert.rejects(store.addRoute({ ...r, id: "r2" }));
  await store.deleteRoute("z", "r1");
  assert.deepEqual(
    events.map((e) => (e.type === "change" ? e.what : e.type)),
    [ROUTES_CHANGED, ROUTES_CHANGED],
  );
});
