import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FileContentStore } from "../core/content/file-store.js";
import { sqliteStoreFactory } from "../core/testing/contract.js";
import { openLocalKvStore } from "./cli/local-backend.js";
import { KvCodes } from "./errors.js";
import { KV_LIMITS } from "./limits.js";
import { KV_MIGRATIONS } from "./sqlite-migrations.js";
import { SqliteKvStore } from "./sqlite-store.js";
import { describeKvStore } from "./store.contract.js";

describeKvStore(
  "SQLite",
  sqliteStoreFactory(KV_MIGRATIONS, (db, dir) => new SqliteKvStore(db, new FileContentStore(join(dir, "content")))),
);

// What the SQLite store does with the content store's files, on a state directory as `edgecli serve` lays it out.
let dir: string;
let store: SqliteKvStore;
let close: () => void;
const ACCOUNT = "a".repeat(32);

before(() => {
  dir = mkdtempSync(join(tmpdir(), "kv-store-"));
  ({ store, close } = openLocalKvStore(dir));
});
after(() => {
  close();
  rmSync(dir, { recursive: true, force: true });
});

const now = () => Math.floor(Date.now() / 1000);
const contentFiles = () =>
  readdirSync(join(dir, "content", "kv"))
    .filter((d) => d !== "tmp")
    .flatMap((d) => readdirSync(join(dir, "content", "kv", d)));

test("values over the inline limit are one content file each; overwriting and deleting leave none behind", async () => {
  const ns = (await store.createNamespace(ACCOUNT, "values")).id;
  const before = contentFiles().length;
  await store.put(ns, "small", Buffer.alloc(KV_LIMITS.inlineValueBytes, 1));
  assert.equal(contentFiles().length, before, "a value of the inline limit stays in SQLite");
  const big = Buffer.alloc(KV_LIMITS.inlineValueBytes + 1, 7);
  await store.put(ns, "big", big);
  assert.equal(contentFiles().length, before + 1);
  assert.deepEqual((await store.get(ns, "big"))?.value, big);
  // Overwriting with a small value and deleting leave no content file behind.
  await store.put(ns, "big", Buffer.from("small"));
  assert.equal(contentFiles().length, before);
  await store.put(ns, "big", big);
  await store.delete(ns, "big");
  assert.equal(contentFiles().length, before);
  assert.equal(await store.get(ns, "big"), null);
});

test("purging expired entries deletes their content files", async () => {
  const ns = (await store.createNamespace(ACCOUNT, "expiry")).id;
  await store.put(ns, "soon", Buffer.from("x"), { expirationTtl: 60 });
  await store.put(ns, "big-soon", Buffer.alloc(KV_LIMITS.inlineValueBytes + 10), { expirationTtl: 60 });
  await store.put(ns, "keep", Buffer.from("y"));
  const files = contentFiles().length;
  // Pretend time moved on by purging "as of" two minutes from now: rows go, and their content files with them.
  assert.ok((await store.purgeExpired(now() + 120)) >= 2);
  assert.equal(contentFiles().length, files - 1);
  assert.deepEqual(
    (await store.list(ns)).keys.map((k) => k.name),
    ["keep"],
  );
});

test("deleting a namespace removes its entries and their content files", async () => {
  const ns = (await store.createNamespace(ACCOUNT, "doomed")).id;
  const files = contentFiles().length;
  await store.put(ns, "big", Buffer.alloc(KV_LIMITS.inlineValueBytes * 2));
  assert.equal(contentFiles().length, files + 1);
  await store.deleteNamespace(ACCOUNT, ns);
  assert.equal(contentFiles().length, files);
  assert.equal(await store.get(ns, "big"), null);
});

test("content gc removes files no entry names (a crash between file and commit) and keeps live ones", async () => {
  const ns = (await store.createNamespace(ACCOUNT, "gc")).id;
  await store.put(ns, "live", Buffer.alloc(KV_LIMITS.inlineValueBytes + 1, 3));
  const orphan = await new FileContentStore(join(dir, "content", "kv")).put(Buffer.from("left behind"));
  assert.ok(contentFiles().includes(orphan.id));
  await new Promise((r) => setTimeout(r, 20)); // gc takes files strictly older than the grace period
  assert.equal(await store.gcContent(0), 1);
  assert.ok(!contentFiles().includes(orphan.id));
  assert.equal((await store.get(ns, "live"))?.value.length, KV_LIMITS.inlineValueBytes + 1);
});

test("--local adopts a namespace id it is given, once, under the account it names", async () => {
  const id = "c".repeat(32);
  await store.adoptNamespace(ACCOUNT, id);
  await store.adoptNamespace("someone-else", id);
  assert.deepEqual(await store.getNamespace(ACCOUNT, id), { id, title: `local-${id}`, supports_url_encoding: true });
  await assert.rejects(store.adoptNamespace(ACCOUNT, "x".repeat(65)), (e: { errors: { code: number }[] }) => e.errors[0]!.code === KvCodes.badRequest);
});
