import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { FileContentStore } from "../core/content/file-store.js";
import { openDatabase } from "../core/db/sqlite.js";
import { SecretBox, SecretOpenError } from "../core/secret-box.js";
import { WorkersStore, workersMigrations } from "./store.js";

test("secrets stored in clear by an older version are sealed when the store opens; a wrong key stops the open", () => {
  const dir = mkdtempSync(join(tmpdir(), "edge-workers-store-"));
  const file = join(dir, "workers.sqlite");
  const content = new FileContentStore(join(dir, "content"));
  try {
    const old = openDatabase(file, workersMigrations.slice(0, 1));
    old
      .prepare(
        `INSERT INTO scripts (account_id, name, version_id, etag, main_module, compatibility_date, compatibility_flags, bindings, modules, created_on, modified_on)
       VALUES ('acct', 'app', 'v1', 'e', 'index.js', '2024-09-01', '[]', '[]', '[]', 'now', 'now')`,
      )
      .run();
    old.prepare("INSERT INTO secrets (account_id, script, name, value) VALUES ('acct', 'app', 'TOKEN', 'clear-value-77')").run();
    old.close();

    const box = SecretBox.fromKey(randomBytes(32));
    const db = openDatabase(file, workersMigrations);
    const store = new WorkersStore(db, content, box);
    assert.deepEqual([...store.secretValues("acct", "app")], [["TOKEN", "clear-value-77"]]);
    const row = db.prepare("SELECT value, sealed FROM secrets").get() as { value: string; sealed: number };
    assert.equal(row.sealed, 1);
    assert.ok(!row.value.includes("clear-value-77"));
    for (const f of [file, `${file}-wal`]) assert.ok(!existsSync(f) || !readFileSync(f).includes("clear-value-77"), `${f} no longer holds the clear value`);

    store.changeSecret("acct", "app", "OTHER", "second-value-88", "v2");
    const values = db.prepare("SELECT value FROM secrets").all() as { value: string }[];
    assert.ok(
      values.every((v) => !v.value.includes("value-")),
      "new secrets are sealed too",
    );
    assert.equal(store.secretValues("acct", "app").get("OTHER"), "second-value-88");
    db.close();

    const again = openDatabase(file, workersMigrations);
    assert.throws(() => new WorkersStore(again, content, SecretBox.fromKey(randomBytes(32))), SecretOpenError);
    again.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
