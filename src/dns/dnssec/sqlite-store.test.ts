import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";
import { SecretBox } from "../../core/secret-box.js";
import { sqliteStoreFactory } from "../../core/testing/contract.js";
import { generateKey, newKeyId } from "./keys.js";
import { DNSSEC_MIGRATIONS } from "./sqlite-migrations.js";
import { SqliteDnssecStore } from "./sqlite-store.js";
import { describeDnssecStore } from "./store.contract.js";

const box = SecretBox.fromKey(randomBytes(32));
const open = sqliteStoreFactory(DNSSEC_MIGRATIONS, (db) => ({ db, store: new SqliteDnssecStore(db, box) }));

describeDnssecStore("SQLite", async () => {
  const { store, close } = await open();
  return { store: store.store, close };
});

test("SQLite DNSSEC store: private keys are sealed at rest, bound to their row, and unreadable with another secrets key", async () => {
  const { store, close } = await open();
  try {
    const material = generateKey("ksk");
    const zone = randomBytes(16).toString("hex");
    const k = {
      id: newKeyId(),
      role: "ksk" as const,
      state: "active" as const,
      ...material,
      created_on: "2026-01-01T00:00:00.000Z",
      state_since: "2026-01-01T00:00:00.000Z",
    };
    await store.store.put({ zone_id: zone, status: "active", enabled_on: k.created_on, modified_on: k.created_on, keys: [k] });
    const raw = JSON.stringify(store.db.prepare("SELECT * FROM keys").all());
    const pemBody = material.private_key.split("\n")[1];
    assert.ok(!raw.includes(pemBody) && !raw.includes("PRIVATE KEY"), "no part of the private key is stored in clear");
    assert.equal((await store.store.get(zone))?.keys[0].private_key, material.private_key);

    // A sealed key moved to another zone's row does not open there.
    store.db.prepare("INSERT INTO zones (zone_id, status, enabled_on, modified_on) VALUES ('other', 'active', NULL, 'x')").run();
    store.db.prepare("UPDATE keys SET zone_id = 'other'").run();
    await assert.rejects(store.store.get("other"), /cannot be opened/);
    // Nor with another secrets key.
    await assert.rejects(new SqliteDnssecStore(store.db, SecretBox.fromKey(randomBytes(32))).get("other"), /cannot be opened/);
  } finally {
    close();
  }
});
