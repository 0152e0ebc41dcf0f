import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { openDatabase } from "../db/sqlite.js";
import { AuthService } from "./auth-service.js";
import { Principal } from "./principal.js";
import { IDENTITY_MIGRATIONS } from "./sqlite-migrations.js";
import { SqliteIdentityStore } from "./sqlite-store.js";

/** S3 access keys are API token ids; their secret is the SHA-256 hex of the token's value (R2's derivation). */
test("an access key resolves to its token's principal and secret; disabled, expired and revoked tokens do not", async () => {
  const store = new SqliteIdentityStore(openDatabase(":memory:", IDENTITY_MIGRATIONS));
  const auth = new AuthService(store);
  const account = await store.createAccount("A");
  const other = await store.createAccount("B");
  const user = await store.createUser("s3@example.com");
  await store.addMembership(user.id, account.id);
  await store.addMembership(user.id, other.id);
  const creator = Principal.forGlobalKey(user.id, user.email, new Set([account.id, other.id]));
  const { token, value } = await auth.createToken(creator, { name: "s3", grants: [{ account_id: account.id, permissions: ["r2_edit"] }] });

  const key = await auth.verifyAccessKey(token.id);
  assert.ok(key);
  assert.equal(key.secret, createHash("sha256").update(value).digest("hex"));
  assert.equal(key.token.id, token.id);
  assert.equal(key.principal.can(account.id, "r2_edit"), true);
  assert.equal(key.principal.can(account.id, "r2_read"), true);
  assert.equal(key.principal.can(other.id, "r2_read"), false);
  assert.equal(await auth.verifyAccessKey("0".repeat(32)), undefined);

  await auth.updateToken(creator, token.id, { name: "s3", grants: [{ account_id: account.id, permissions: ["r2_edit"] }], status: "disabled" });
  assert.equal(await auth.verifyAccessKey(token.id), undefined, "a disabled token is refused at once");
  await auth.updateToken(creator, token.id, {
    name: "s3",
    grants: [{ account_id: account.id, permissions: ["r2_edit"] }],
    status: "active",
    expires_on: new Date(Date.now() - 1000).toISOString(),
  });
  assert.equal(await auth.verifyAccessKey(token.id), undefined, "an expired token is refused");
  await auth.updateToken(creator, token.id, { name: "s3", grants: [{ account_id: account.id, permissions: ["r2_read"] }], expires_on: null });
  assert.equal((await auth.verifyAccessKey(token.id))?.principal.can(account.id, "r2_edit"), false, "narrowed grants apply at once");

  const rolled = await auth.rollToken(creator, token.id);
  assert.equal((await auth.verifyAccessKey(token.id))?.secret, createHash("sha256").update(rolled).digest("hex"), "a roll gives a new secret");
  await auth.deleteToken(creator, token.id);
  assert.equal(await auth.verifyAccessKey(token.id), undefined, "a revoked token is refused at once");
});
