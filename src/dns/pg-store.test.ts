import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";
import { PostgresBus, type BusEvent } from "../core/cluster/bus.js";
import { migrateArea } from "../core/db/pg-migrations.js";
import { Postgres } from "../core/db/postgres.js";
import { assertPostgresRefusals, testPostgres, unreachablePostgres } from "../core/testing/backends.js";
import { sharedPostgres, skipReason, testDatabase } from "../core/testing/services.js";
import { DNS_PG_MIGRATIONS } from "./pg-migrations.js";
import { PgDnsStore } from "./pg-store.js";
import { describeDnsStore, newZone, record } from "./store.contract.js";

describeDnsStore("PostgreSQL", async (t) => {
  const pg = await testPostgres(t, "dns", DNS_PG_MIGRATIONS);
  return pg && { store: new PgDnsStore(pg), close() {} };
});

/** Resolves when `check` holds, polling; the deadline only guards against a hang. */
async function until(check: () => boolean, what: string): Promise<void> {
  const start = Date.now();
  while (!check()) {
    if (Date.now() - start > 30_000) assert.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

test("every committed zone write announces the zone's id on the bus, in commit order; a refused write announces nothing", async (t) => {
  const db = await testDatabase(t);
  if (!db) return;
  const pg = new Postgres({ url: db.url, poolSize: 2 });
  t.after(() => pg.close());
  await migrateArea(pg, "dns", DNS_PG_MIGRATIONS);
  const bus = new PostgresBus(pg, { url: db.url, nodeId: "writer" });
  t.after(() => bus.close());
  await bus.start();
  const heard: BusEvent[] = [];
  bus.subscribe("dns", (e) => heard.push(e));
  const store = new PgDnsStore(pg, bus);

  const a = newZone("a.example");
  const b = newZone("b.example");
  await store.createZone(a);
  await store.updateZone({ ...a, serial: a.serial + 1 }, {}, { ifSerial: a.serial });
  // Refused (stale serial, then a name taken, then a zone that is not there): rolled back, so no notice.
  await assert.rejects(store.updateZone({ ...a, serial: a.serial + 2 }, {}, { ifSerial: a.serial }));
  await assert.rejects(store.createZone({ ...newZone("a.example") }));
  await assert.rejects(store.updateZone(newZone("missing.example")));
  assert.equal(await store.deleteZone(newZone("missing.example").id), false);
  await store.createZone(b);
  assert.equal(await store.deleteZone(a.id), true);
  // Notices arrive in commit order: once b's deletion is heard, any notice of a refused write would have been too.
  await store.deleteZone(b.id);
  await until(() => heard.length >= 5, "five notices");
  assert.deepEqual(
    heard.map((e) => (e.type === "change" ? e.what : e.type)),
    [`zone:${a.id}`, `zone:${a.id}`, `zone:${b.id}`, `zone:${a.id}`, `zone:${b.id}`],
  );
  assert.ok(heard.every((e) => e.type === "change" && e.origin === "writer"));
});

test("a change of 25 000 records (more than one statement's worth) is read back whole and in order", async (t) => {
  const pg = await testPostgres(t, "dns", DNS_PG_MIGRATIONS);
  if (!pg) return;
  const store = new PgDnsStore(pg);
  const z = newZone("big.example");
  await store.createZone(z);
  const base = Date.parse("2026-01-01T00:00:00.000Z");
  const records = Array.from({ length: 25_000 }, (_, i) => record(z, `r${i}`, new Date(base + i).toISOString()));
  await store.updateZone({ ...z, serial: z.serial + 1 }, { upserts: records });
  const read = [];
  for (let after: string | undefined, first = true; first || after !== undefined; first = false) {
    const page = await store.listRecords(z.id, { after, limit: 10_000 });
    read.push(...page.records);
    after = page.next;
  }
  assert.equal(read.length, records.length);
  assert.deepEqual(read[24_999], records[24_999]);
  assert.deepEqual(
    read.map((r) => r.id),
    records.map((r) => r.id),
  );
});

test("PostgreSQL unreachable: the store's errors are the core 503 naming PostgreSQL", async (t) => {
  const pg = unreachablePostgres();
  t.after(() => pg.close());
  const store = new PgDnsStore(pg);
  const z = newZone("down.example");
  await assertPostgresRefusals([() => store.listZones(), () => store.createZone(z), () => store.updateZone(z), () => store.deleteZone(z.id)]);
});

test("on a database that collates as glibc's en_US does (ICU en-US, punctuation skipped), zones and record pages still go in byte order", async (t) => {
  const service = await sharedPostgres();
  const skip = skipReason(service);
  if (skip || !service.available) return t.skip(skip || "");
  const { default: pgClient } = await import("pg");
  const admin = new pgClient.Client({ connectionString: service.server.url });
  await admin.connect();
  const name = `edge_test_icu_${randomBytes(6).toString("hex")}`;
  await admin.query(`CREATE DATABASE ${name} TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US-u-ka-shifted' LOCALE 'C'`);
  t.after(async () => {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  });
  const url = new URL(service.server.url);
  url.pathname = `/${name}`;
  const pg = new Postgres({ url: url.href, poolSize: 2 });
  t.after(() => pg.close());
  await migrateArea(pg, "dns", DNS_PG_MIGRATIONS);
  // The database itself orders these as a language does (punctuation skipped): what the store must not do.
  const byLocale = await pg.rows<{ n: string }>("SELECT n FROM unnest(ARRAY['a-c.example', 'ab.example']) AS n ORDER BY n");
  assert.deepEqual(
    byLocale.map((r) => r.n),
    ["ab.example", "a-c.example"],
  );
  const store = new PgDnsStore(pg);
  for (const n of ["ab.example", "a-c.example"]) await store.createZone(newZone(n));
  assert.deepEqual(
    (await store.listZones()).map((z) => z.name),
    ["a-c.example", "ab.example"],
  );
  // Ids that tie on creation time are compared byte by byte too (upper case before lower, '-' before '.').
  const z = (await store.listZones())[0];
  const ids = ["x.1", "x-1", "X1", "x1"];
  const at = "2026-01-02T00:00:00.000Z";
  const records = ids.map((id) => record(z, id, at, { id }));
  await store.updateZone(z, { upserts: records });
  const paged = [];
  for (let after: string | undefined, first = true; first || after !== undefined; first = false) {
    const page = await store.listRecords(z.id, { after, limit: 1 });
    paged.push(...page.records.map((r) => r.id));
    after = page.next;
  }
  assert.deepEqual(paged, ["X1", "x-1", "x.1", "x1"]);
});
