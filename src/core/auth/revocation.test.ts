import assert from "node:assert/strict";
import { test } from "node:test";
import { PostgresBus } from "../cluster/bus.js";
import { migrateArea } from "../db/pg-migrations.js";
import { Postgres } from "../db/postgres.js";
import { testDatabase } from "../testing/services.js";
import { AuthService } from "./auth-service.js";
import { newApiToken, newGlobalKey, newId } from "./credentials.js";
import { IDENTITY_PG_MIGRATIONS } from "./pg-migrations.js";
import { PgIdentityStore } from "./pg-store.js";

test("a token revoked through one node is refused by another node that had it cached, once the change notice arrives", async (t) => {
  const db = await testDatabase(t);
  if (!db) return;
  const nodes = ["node-a", "node-b"].map((nodeId) => {
    const pg = new Postgres({ url: db.url, poolSize: 2 });
    const bus = new PostgresBus(pg, { url: db.url, nodeId });
    return { pg, bus, auth: new AuthService(new PgIdentityStore(pg), undefined, bus) };
  });
  t.after(async () => {
    for (const n of nodes) {
      await n.bus.close();
      await n.pg.close();
    }
  });
  const [a, b] = nodes;
  await migrateArea(a.pg, "core", IDENTITY_PG_MIGRATIONS);
  await Promise.all(nodes.map((n) => n.bus.start()));

  const store = new PgIdentityStore(a.pg);
  const account = await store.createAccount("A");
  const user = await store.createUser("owner@example.com");
  await store.addMembership(user.id, account.id);
  const key = newGlobalKey();
  await store.setGlobalKey(user.id, key);
  const value = newApiToken();
  const token = await store.createToken({
    id: newId(),
    user_id: user.id,
    name: "to revoke",
    grants: [{ account_id: account.id, permissions: ["kv_read"] }],
    not_before: null,
    expires_on: null,
    value,
  });

  // Node b has the token in its cache: answered synchronously, without asking PostgreSQL.
  assert.equal((await b.auth.verifyToken(value))?.token.id, token.id);
  const cached = b.auth.verifyToken(value);
  assert.ok(!(cached instanceof Promise) && cached?.token.id === token.id);

  const owner = await a.auth.verifyGlobalKey("owner@example.com", key);
  assert.ok(owner);
  const revoked = performance.now();
  await a.auth.deleteToken(owner, token.id);
  // Poll the cache-only answer: the moment it stops being the cached token, node b has dropped it.
  for (;;) {
    const answer = b.auth.verifyToken(value);
    if (answer instanceof Promise) break;
    assert.ok(performance.now() - revoked < 30_000, "node b never dropped the revoked token (hang guard)");
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  const latency = performance.now() - revoked;
  t.diagnostic(`revocation reached the other node's credential cache after ${latency.toFixed(1)} ms`);
  assert.equal(await b.auth.verifyToken(value), undefined, "and PostgreSQL says it is gone");
});
