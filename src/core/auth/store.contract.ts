import assert from "node:assert/strict";
import { storeContract } from "../testing/contract.js";
import { hashSecret } from "./credentials.js";
import type { IdentityStore, NewToken } from "./store.js";

/** Records made after this have a later creation time than those made before. */
const nextMillisecond = () => new Promise((resolve) => setTimeout(resolve, 2));

/** What every IdentityStore does, whatever keeps the data (run by sqlite-store.test.ts). */
export const describeIdentityStore = storeContract<IdentityStore>("IdentityStore", (it) => {
  const newToken = (userId: string, id: string, value: string, accountId: string): NewToken => ({
    id,
    user_id: userId,
    name: `token ${id}`,
    grants: [{ account_id: accountId, permissions: ["dns_read", "kv_edit"] }],
    not_before: null,
    expires_on: "2999-01-01T00:00:00.000Z",
    value,
  });

  it("is empty until the first user, and finds users by id and by email in any case", async (store) => {
    assert.equal(await store.isEmpty(), true);
    const u = await store.createUser("Someone@Example.com");
    assert.equal(await store.isEmpty(), false);
    assert.deepEqual(await store.getUser(u.id), u);
    assert.deepEqual(await store.findUserByEmail("someone@example.COM"), u);
    assert.equal(await store.findUserByEmail("nobody@example.com"), undefined);
    assert.equal(await store.getUser("0".repeat(32)), undefined);
    await assert.rejects(store.createUser("SOMEONE@example.com"), "an email belongs to one user");
  });

  it("keeps accounts with the ids given, and lists a user's accounts oldest first, each once", async (store) => {
    const id = "a".repeat(32);
    const first = await store.createAccount("First", id);
    assert.equal(first.id, id);
    assert.deepEqual(await store.getAccount(id), first);
    assert.equal(await store.getAccount("b".repeat(32)), undefined);
    await nextMillisecond();
    const second = await store.createAccount("Second");
    assert.match(second.id, /^[0-9a-f]{32}$/);
    const other = await store.createAccount("Not joined");
    const u = await store.createUser("member@example.com");
    await store.addMembership(u.id, second.id);
    await store.addMembership(u.id, first.id);
    await store.addMembership(u.id, first.id);
    assert.deepEqual(
      (await store.listAccountsOfUser(u.id)).map((a) => a.name),
      ["First", "Second"],
    );
    assert.equal(await store.isMember(u.id, first.id), true);
    assert.equal(await store.isMember(u.id, other.id), false);
  });

  it("keeps only the hash of a global key, and a new key replaces the old", async (store) => {
    const u = await store.createUser("key@example.com");
    assert.equal(await store.globalKeyHash(u.id), undefined);
    await store.setGlobalKey(u.id, "first-key-0123456789abcdef");
    assert.equal(await store.globalKeyHash(u.id), hashSecret("first-key-0123456789abcdef"));
    await store.setGlobalKey(u.id, "second-key-0123456789abcdef");
    assert.equal(await store.globalKeyHash(u.id), hashSecret("second-key-0123456789abcdef"));
  });

  it("creates tokens active and unused, finds them by the hash of their value, never shows the hash otherwise", async (store) => {
    const u = await store.createUser("tokens@example.com");
    const acc = await store.createAccount("A");
    const value = "v".repeat(40);
    const t = await store.createToken(newToken(u.id, "1".repeat(32), value, acc.id));
    assert.equal(t.status, "active");
    assert.equal(t.last_used_on, null);
    assert.equal(t.expires_on, "2999-01-01T00:00:00.000Z");
    assert.deepEqual(t.grants, [{ account_id: acc.id, permissions: ["dns_read", "kv_edit"] }]);
    assert.equal("token_hash" in t, false);
    assert.deepEqual(await store.getToken(t.id), t);
    const found = await store.findTokenByHash(hashSecret(value));
    assert.equal(found?.id, t.id);
    assert.equal(found?.token_hash, hashSecret(value));
    assert.equal(await store.findTokenByHash(hashSecret("w".repeat(40))), undefined);
    assert.equal(await store.getToken("2".repeat(32)), undefined);
    const byId = await store.findTokenById(t.id);
    assert.equal(byId?.token_hash, hashSecret(value), "by id, with the hash (an S3 secret access key)");
    assert.equal(await store.findTokenById("2".repeat(32)), undefined);
  });

  it("lists a user's tokens oldest first, and only that user's", async (store) => {
    const u = await store.createUser("lister@example.com");
    const other = await store.createUser("other@example.com");
    const acc = await store.createAccount("A");
    await store.createToken(newToken(u.id, "1".repeat(32), "a".repeat(40), acc.id));
    await nextMillisecond();
    await store.createToken(newToken(u.id, "0".repeat(32), "b".repeat(40), acc.id));
    await store.createToken(newToken(other.id, "3".repeat(32), "c".repeat(40), acc.id));
    assert.deepEqual(
      (await store.listTokens(u.id)).map((t) => t.id),
      ["1".repeat(32), "0".repeat(32)],
    );
    assert.deepEqual(await store.listTokens("9".repeat(32)), []);
  });

  it("updates, rolls, touches and deletes tokens; each says when there is no such token", async (store) => {
    const u = await store.createUser("changes@example.com");
    const acc = await store.createAccount("A");
    const t = await store.createToken(newToken(u.id, "1".repeat(32), "a".repeat(40), acc.id));
    const missing = "2".repeat(32);

    const fields = {
      name: "renamed",
      grants: [{ account_id: acc.id, permissions: ["r2_read" as const] }],
      status: "disabled" as const,
      not_before: null,
      expires_on: null,
    };
    const updated = await store.updateToken(t.id, fields);
    assert.equal(updated?.name, "renamed");
    assert.equal(updated?.status, "disabled");
    assert.equal(updated?.expires_on, null);
    assert.deepEqual(updated?.grants, fields.grants);
    assert.equal(updated?.issued_on, t.issued_on);
    assert.deepEqual(await store.getToken(t.id), updated);
    assert.equal(await store.updateToken(missing, fields), undefined);

    assert.equal(await store.rollToken(t.id, "b".repeat(40)), true);
    assert.equal(await store.findTokenByHash(hashSecret("a".repeat(40))), undefined, "the old value stops working");
    assert.equal((await store.findTokenByHash(hashSecret("b".repeat(40))))?.id, t.id);
    assert.equal(await store.rollToken(missing, "c".repeat(40)), false);

    await store.touchToken(t.id, "2030-01-02T03:04:05.000Z");
    assert.equal((await store.getToken(t.id))?.last_used_on, "2030-01-02T03:04:05.000Z");

    assert.equal(await store.deleteToken(t.id), true);
    assert.equal(await store.getToken(t.id), undefined);
    assert.equal(await store.deleteToken(t.id), false);
  });
});
