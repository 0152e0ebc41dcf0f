import { test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { sqliteStoreFactory } from "../../core/testing/contract.js";
import { SecretBox } from "../../core/secret-box.js";
import { TRANSFER_MIGRATIONS } from "./sqlite-migrations.js";
import { SqliteTransferStore } from "./sqlite-store.js";
import { describeTransferStore } from "./store.contract.js";

const box = SecretBox.fromKey(randomBytes(32));
const open = sqliteStoreFactory(TRANSFER_MIGRATIONS, (db) => new SqliteTransferStore(db, box));

describeTransferStore("SQLite", open);

test("TSIG secrets are sealed in the database file, and open only with the secrets key", async () => {
  const dir = { path: "" };
  const opened = await sqliteStoreFactory(TRANSFER_MIGRATIONS, (db, d) => {
    dir.path = d;
    return { store: new SqliteTransferStore(db, box), db };
  })();
  try {
    const secret = randomBytes(32).toString("base64");
    await opened.store.store.putTsig({ id: "k1", account_id: "a", name: "k.example", algorithm: "hmac-sha256", secret });
    opened.store.db.pragma("wal_checkpoint(TRUNCATE)");
    assert.ok(!readFileSync(join(dir.path, "store.sqlite")).includes(secret), "not in clear in the file");
    await assert.rejects(new SqliteTransferStore(opened.store.db, SecretBox.fromKey(randomBytes(32))).listTsigs(), /cannot be opened/);
  } finally {
    opened.close();
  }
});
