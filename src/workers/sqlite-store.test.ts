import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { FileContentStore } from "../core/content/file-store.js";
import { openDatabase } from "../core/db/sqlite.js";
import { SecretBox, SecretOpenError } from "../core/secret-box.js";
import { sqliteStoreFactory } from "../core/testing/contract.js";
import { WORKERS_MIGRATIONS } from "./sqlite-migrations.js";
import { SqliteWorkersStore } from "./sqlite-store.js";
import { describeWorkersStore } from "./store.contract.js";

describeWorkersStore(
  "SQLite",
  sqliteStoreFactory(
    WORKERS_MIGRATIONS,
    (db, dir) => new SqliteWorkersStore(db, new FileContentStore(join(dir, "content")), SecretBox.fromKey(randomBytes(32))),
  ),
);

test("secrets stored in clear by an older version are sealed when the store opens; a wrong key stops the open", async () => {
  const dir = mkdtempSync(join(tmpdir(), "edge-workers-store-"));
  const file = join(dir, "workers.sqlite");
  const content = new FileContentStore(join(dir, "content"));
  try {
    const old = openDatabase(file, WORKERS_MIGRATIONS.slice(0, 1));
    old
      .prepare(
        `INSERT INTO scripts (account_id, name, version_id, etag, main_module, compatibility_date, compatibility_flags, bindings, modules, created_on, modified_on)
       VALUES ('acct', 'app', 'v1', 'e', 'index.js', '2024-09-01', '[]', '[]', '[]', 'now', 'now')`,
      )
      .run();
    old.prepare("INSERT INTO secrets (account_id, script, name, value) VALUES ('acct', 'app', 'TOKEN', 'clear-value-77')").run();
    old.close();

    const box = SecretBox.fromKey(randomBytes(32));
    const db = openDatabase(file, WORKERS_MIGRATIONS);
    const store = new SqliteWorkersStore(db, content, box);
    assert.deepEqual([...(await store.secretValues("acct", "app"))], [["TOKEN", "clear-value-77"]]);
    const row = db.prepare("SELECT value, sealed FROM secrets").get() as { value: string; sealed: number };
    assert.equal(row.sealed, 1);
    assert.ok(!row.value.includes("clear-value-77"));
    for (const f of [file, `${file}-wal`]) assert.ok(!existsSync(f) || !readFileSync(f).includes("clear-value-77"), `${f} no longer holds the clear value`);

    await store.changeSecret("acct", "app", "OTHER", "second-value-88", "v2");
    const values = db.prepare("SELECT value FROM secrets").all() as { value: string }[];
    assert.ok(
      values.every((v) => !v.value.includes("value-")),
      "new secrets are sealed too",
    );
    assert.equal((await store.secretValues("acct", "app")).get("OTHER"), "second-value-88");
    db.close();

    const again = openDatabase(file, WORKERS_MIGRATIONS);
    assert.throws(() => new SqliteWorkersStore(again, content, SecretBox.fromKey(randomBytes(32))), SecretOpenError);
    again.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a script saved before versions were kept starts with its live version kept and one deployment of it", async () => {
  const dir = mkdtempSync(join(tmpdir(), "edge-workers-store-"));
  const file = join(dir, "workers.sqlite");
  try {
    const old = openDatabase(file, WORKERS_MIGRATIONS.slice(0, 3));
    old
      .prepare(
        `INSERT INTO scripts (account_id, name, version_id, etag, main_module, compatibility_date, compatibility_flags, bindings, modules, created_on, modified_on)
       VALUES ('acct', 'app', 'v1', 'e', 'index.js', '2024-09-01', '["nodejs_compat"]', '[]', '[]', 'then', 'now')`,
      )
      .run();
    old.close();
    const store = new SqliteWorkersStore(
      openDatabase(file, WORKERS_MIGRATIONS),
      new FileContentStore(join(dir, "content")),
      SecretBox.fromKey(randomBytes(32)),
    );
    const { items } = await store.versions("acct", "app", 1, 10);
    assert.deepEqual(
      items.map((v) => [v.id, v.number, v.compatibilityFlags, v.createdOn, v.triggeredBy]),
      [["v1", 1, ["nodejs_compat"], "now", "upload"]],
    );
    assert.deepEqual(
      (await store.deployments("acct", "app")).map((d) => [d.id, d.versions]),
      [["v1", [{ versionId: "v1", percentage: 100 }]]],
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
