import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "../db/sqlite.js";
import { ALL_PERMISSIONS } from "./permissions.js";
import { Principal } from "./principal.js";
import { sqliteStoreFactory } from "../testing/contract.js";
import { IDENTITY_MIGRATIONS } from "./sqlite-migrations.js";
import { SqliteIdentityStore } from "./sqlite-store.js";
import { describeIdentityStore } from "./store.contract.js";
import type { Grant } from "./store.js";

describeIdentityStore(
  "SQLite",
  sqliteStoreFactory(IDENTITY_MIGRATIONS, (db) => new SqliteIdentityStore(db)),
);

test("tokens stored with `*` before the upgrade are resolved to the owner's memberships of that day, and stay so", async () => {
  const dir = mkdtempSync(join(tmpdir(), "identity-upgrade-"));
  try {
    const file = join(dir, "core.sqlite");
    // The state an older version left: a user on A and B, and tokens whose grants say "*".
    const old = openDatabase(file, IDENTITY_MIGRATIONS.slice(0, 1));
    const oldStore = new SqliteIdentityStore(old);
    const a = await oldStore.createAccount("A");
    // Accounts are listed by creation time (then id): B is made a millisecond later, so the order is A, B.
    await new Promise((resolve) => setTimeout(resolve, 2));
    const b = await oldStore.createAccount("B");
    const user = await oldStore.createUser("old@example.com");
    await oldStore.addMembership(user.id, a.id);
    await oldStore.addMembership(user.id, b.id);
    const loner = await oldStore.createUser("loner@example.com");
    await oldStore.addMembership(loner.id, b.id);
    const token = async (userId: string, grants: Grant[], value: string) =>
      (await oldStore.createToken({ id: value.slice(0, 32), user_id: userId, name: "legacy", grants, not_before: null, expires_on: null, value })).id;
    const everything = await token(user.id, [{ account_id: "*", permissions: [...ALL_PERMISSIONS] }], "e".repeat(40));
    const mixed = await token(
      user.id,
      [
        { account_id: a.id, permissions: ["dns_edit"] },
        { account_id: "*", permissions: ["kv_read"] },
      ],
      "m".repeat(40),
    );
    const concrete = await token(loner.id, [{ account_id: b.id, permissions: ["r2_read"] }], "c".repeat(40));
    old.close();

    const db = openDatabase(file, IDENTITY_MIGRATIONS);
    const store = new SqliteIdentityStore(db);
    assert.deepEqual((await store.getToken(everything))!.grants, [
      { account_id: a.id, permissions: [...ALL_PERMISSIONS] },
      { account_id: b.id, permissions: [...ALL_PERMISSIONS] },
    ]);
    assert.deepEqual((await store.getToken(mixed))!.grants, [
      { account_id: a.id, permissions: ["dns_edit"] },
      { account_id: a.id, permissions: ["kv_read"] },
      { account_id: b.id, permissions: ["kv_read"] },
    ]);
    assert.deepEqual((await store.getToken(concrete))!.grants, [{ account_id: b.id, permissions: ["r2_read"] }]);

    // The user joins C after the upgrade: the key reaches it, the resolved token does not.
    const c = await store.createAccount("C");
    await store.addMembership(user.id, c.id);
    const members = new Set((await store.listAccountsOfUser(user.id)).map((x) => x.id));
    const asToken = new Principal("api_token", user.id, user.email, members, (await store.getToken(everything))!.grants, everything);
    assert.deepEqual(asToken.accounts().sort(), [a.id, b.id].sort());
    assert.equal(asToken.can(c.id, "dns_read"), false);
    assert.equal(Principal.forGlobalKey(user.id, user.email, members).can(c.id, "dns_read"), true);
    db.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a principal never expands a stray `*` grant, and a grant on an account the user left reaches nothing", () => {
  const p = new Principal("api_token", "u", "u@example.com", new Set(["a"]), [
    { account_id: "*", permissions: ["dns_edit"] },
    { account_id: "b", permissions: ["kv_read"] },
    { account_id: "a", permissions: ["r2_edit"] },
  ]);
  assert.deepEqual(p.accounts(), ["a"]);
  assert.deepEqual(p.permissionsOn("a").sort(), ["r2_edit", "r2_read"]);
  assert.equal(p.can("a", "dns_edit"), false);
});
