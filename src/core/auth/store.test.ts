import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "../db/sqlite.js";
import { ALL_PERMISSIONS } from "./permissions.js";
import { Principal } from "./principal.js";
import { identityMigrations, SqliteIdentityStore, type Grant } from "./store.js";

test("tokens stored with `*` before the upgrade are resolved to the owner's memberships of that day, and stay so", () => {
  const dir = mkdtempSync(join(tmpdir(), "identity-upgrade-"));
  try {
    const file = join(dir, "core.sqlite");
    // The state an older version left: a user on A and B, and tokens whose grants say "*".
    const old = openDatabase(file, identityMigrations.slice(0, 1));
    const oldStore = new SqliteIdentityStore(old);
    const a = oldStore.createAccount("A");
    const b = oldStore.createAccount("B");
    const user = oldStore.createUser("old@example.com");
    oldStore.addMembership(user.id, a.id);
    oldStore.addMembership(user.id, b.id);
    const loner = oldStore.createUser("loner@example.com");
    oldStore.addMembership(loner.id, b.id);
    const token = (userId: string, grants: Grant[], value: string) =>
      oldStore.createToken({ id: value.slice(0, 32), user_id: userId, name: "legacy", grants, not_before: null, expires_on: null, value }).id;
    const everything = token(user.id, [{ account_id: "*", permissions: [...ALL_PERMISSIONS] }], "e".repeat(40));
    const mixed = token(
      user.id,
      [
        { account_id: a.id, permissions: ["dns_edit"] },
        { account_id: "*", permissions: ["kv_read"] },
      ],
      "m".repeat(40),
    );
    const concrete = token(loner.id, [{ account_id: b.id, permissions: ["r2_read"] }], "c".repeat(40));
    old.close();

    const db = openDatabase(file, identityMigrations);
    const store = new SqliteIdentityStore(db);
    assert.deepEqual(store.getToken(everything)!.grants, [
      { account_id: a.id, permissions: [...ALL_PERMISSIONS] },
      { account_id: b.id, permissions: [...ALL_PERMISSIONS] },
    ]);
    assert.deepEqual(store.getToken(mixed)!.grants, [
      { account_id: a.id, permissions: ["dns_edit"] },
      { account_id: a.id, permissions: ["kv_read"] },
      { account_id: b.id, permissions: ["kv_read"] },
    ]);
    assert.deepEqual(store.getToken(concrete)!.grants, [{ account_id: b.id, permissions: ["r2_read"] }]);

    // The user joins C after the upgrade: the key reaches it, the resolved token does not.
    const c = store.createAccount("C");
    store.addMembership(user.id, c.id);
    const members = new Set(store.listAccountsOfUser(user.id).map((x) => x.id));
    const asToken = new Principal("api_token", user.id, user.email, members, store.getToken(everything)!.grants, everything);
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
