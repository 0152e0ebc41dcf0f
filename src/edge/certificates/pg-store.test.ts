import assert from "node:assert/strict";
import { test } from "node:test";
import { LocalBus, type BusEvent } from "../../core/cluster/bus.js";
import { testPostgres } from "../../core/testing/backends.js";
import { CERTIFICATES_PG_MIGRATIONS } from "./pg-migrations.js";
import { CERTIFICATES_AREA, CERTIFICATES_CHANGED, PgCertificateStore } from "./pg-store.js";
import { describeCertificateStore } from "./store.contract.js";

describeCertificateStore("PostgreSQL", async (t) => {
  const pg = await testPostgres(t, CERTIFICATES_AREA, CERTIFICATES_PG_MIGRATIONS);
  return pg && { store: new PgCertificateStore(pg, new LocalBus("test")), close() {} };
});

test("PostgreSQL CertificateStore: issuing and removing a certificate send the notice; claims and failures do not", async (t) => {
  const pg = await testPostgres(t, CERTIFICATES_AREA, CERTIFICATES_PG_MIGRATIONS);
  if (!pg) return t.skip("no PostgreSQL");
  const bus = new LocalBus("node-a");
  const events: BusEvent[] = [];
  bus.subscribe(CERTIFICATES_AREA, (e) => events.push(e));
  const store = new PgCertificateStore(pg, bus);
  await store.ensure("shop.example.com", "a".repeat(32), 0);
  assert.ok(await store.claim("shop.example.com", "node-a", 1, 60_000));
  assert.ok(await store.failed("shop.example.com", "node-a", { error: "x", nextAttemptAt: 2 }));
  assert.ok(await store.claim("shop.example.com", "node-a", 3, 60_000));
  assert.ok(await store.issued("shop.example.com", "node-a", { certPem: "c", keySealed: "k", notAfter: 10, nextAttemptAt: 5 }));
  assert.ok(await store.delete("shop.example.com"));
  assert.equal(await store.delete("shop.example.com"), false);
  assert.deepEqual(
    events.map((e) => (e.type === "change" ? e.what : e.type)),
    [CERTIFICATES_CHANGED, CERTIFICATES_CHANGED],
  );
});
