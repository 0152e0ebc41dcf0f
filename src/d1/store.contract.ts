import assert from "node:assert/strict";
import { storeContract } from "../core/testing/contract.js";
import { D1Codes } from "./errors.js";
import type { D1Store } from "./store.js";

const A = "a".repeat(32);
const B = "b".repeat(32);

const code = (expected: number) => (e: unknown) => (e as { errors: { code: number }[] }).errors[0]!.code === expected;

/** What every D1Store does (the registry only: a database's contents are the engine's). */
export const describeD1Store = storeContract<D1Store>("D1Store", (it) => {
  it("a created database is listed and read back by uuid, in its account only", async (store) => {
    const db = await store.createDatabase(A, "orders");
    assert.match(db.uuid, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    assert.equal(db.name, "orders");
    assert.equal(db.version, "production");
    assert.ok(!Number.isNaN(Date.parse(db.created_at)));
    assert.deepEqual(await store.getDatabase(A, db.uuid), db);
    assert.equal(await store.getDatabase(B, db.uuid), undefined);
    assert.deepEqual(await store.listDatabases(A), { databases: [db], total: 1 });
    assert.deepEqual(await store.listDatabases(B), { databases: [], total: 0 });
  });

  it("names are unique per account, checked, and filter the list", async (store) => {
    await store.createDatabase(A, "b-db");
    await store.createDatabase(A, "a-db");
    await assert.rejects(store.createDatabase(A, "a-db"), code(D1Codes.nameTaken));
    // Another account may use the same name.
    await store.createDatabase(B, "a-db");
    for (const bad of ["", "-x", "has space", "x".repeat(65), "ümlaut", "__proto__/x"])
      await assert.rejects(store.createDatabase(A, bad), code(D1Codes.badRequest), bad);
    const all = await store.listDatabases(A);
    assert.deepEqual(
      all.databases.map((d) => d.name),
      ["a-db", "b-db"],
    );
    const page = await store.listDatabases(A, { offset: 1, limit: 1 });
    assert.deepEqual(
      page.databases.map((d) => d.name),
      ["b-db"],
    );
    assert.equal(page.total, 2);
    const named = await store.listDatabases(A, { name: "b-db" });
    assert.deepEqual([named.databases.map((d) => d.name), named.total], [["b-db"], 1]);
  });

  it("a delete removes the database from its account only; another account cannot delete it", async (store) => {
    const db = await store.createDatabase(A, "doomed");
    await assert.rejects(store.deleteDatabase(B, db.uuid), code(D1Codes.databaseNotFound));
    assert.ok(await store.getDatabase(A, db.uuid));
    await store.deleteDatabase(A, db.uuid);
    assert.equal(await store.getDatabase(A, db.uuid), undefined);
    await assert.rejects(store.deleteDatabase(A, db.uuid), code(D1Codes.databaseNotFound));
    // The name is free again.
    await store.createDatabase(A, "doomed");
  });

  it("adopting a uuid records it once, in the account that names it first", async (store) => {
    const uuid = "0f2ac74b-498b-4802-8cb6-8387c421e279";
    const db = await store.adoptDatabase(A, uuid, "adopted");
    assert.equal(db.uuid, uuid);
    assert.deepEqual(await store.adoptDatabase(A, uuid, "adopted"), db);
    await assert.rejects(store.adoptDatabase(B, uuid, "adopted"), code(D1Codes.databaseNotFound));
    await assert.rejects(store.adoptDatabase(A, "not-a-uuid", "x"), code(D1Codes.databaseNotFound));
  });
});
