import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EdgeError } from "../core/errors.js";
import { openLocalKvStore } from "./cli/local-backend.js";
import { KV_LIMITS } from "./limits.js";
import type { SqliteKvStore } from "./store.js";

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
const code = (e: unknown) => (e as EdgeError).errors[0]!.code;
const contentFiles = () =>
  readdirSync(join(dir, "content", "kv"))
    .filter((d) => d !== "tmp")
    .flatMap((d) => readdirSync(join(dir, "content", "kv", d)));

test("namespaces: create, unique title per account, rename, list order, delete", async () => {
  const a = await store.createNamespace(ACCOUNT, "b-title");
  const b = await store.createNamespace(ACCOUNT, "a-title");
  assert.match(a.id, /^[0-9a-f]{32}$/);
  await assert.rejects(
    () => store.createNamespace(ACCOUNT, "b-title"),
    (e) => code(e) === 10014,
  );
  // The same title in another account is fine.
  await store.createNamespace("other", "b-title");
  const byTitle = store.listNamespaces(ACCOUNT, { order: "title" });
  assert.deepEqual(
    byTitle.namespaces.map((n) => n.title),
    ["a-title", "b-title"],
  );
  assert.equal(byTitle.total, 2);
  const desc = store.listNamespaces(ACCOUNT, { order: "title", direction: "desc", offset: 1, limit: 1 });
  assert.deepEqual(
    desc.namespaces.map((n) => n.title),
    ["a-title"],
  );
  await assert.rejects(
    () => store.renameNamespace(ACCOUNT, a.id, "a-title"),
    (e) => code(e) === 10014,
  );
  assert.equal((await store.renameNamespace(ACCOUNT, a.id, "c-title")).title, "c-title");
  await assert.rejects(
    () => store.renameNamespace("other", a.id, "x"),
    (e) => code(e) === 10013,
  );
  await store.deleteNamespace(ACCOUNT, b.id);
  assert.equal(store.getNamespace(ACCOUNT, b.id), undefined);
  await assert.rejects(
    () => store.deleteNamespace(ACCOUNT, b.id),
    (e) => code(e) === 10013,
  );
});

test("values round-trip byte for byte, with metadata and expiration; big ones live in the content store", async () => {
  const ns = (await store.createNamespace(ACCOUNT, "values")).id;
  const bin = Buffer.from([0, 255, 1, 128, 10, 13]);
  await store.put(ns, "bin", bin, { metadata: { a: "é" }, expirationTtl: 3600 });
  const got = await store.get(ns, "bin");
  assert.deepEqual(got?.value, bin);
  assert.deepEqual(got?.metadata, { a: "é" });
  assert.ok(got!.expiration! >= now() + 3599);

  const before = contentFiles().length;
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

test("limits: key length and names, value size, metadata size, ttl and expiration", async () => {
  const ns = (await store.createNamespace(ACCOUNT, "limits")).id;
  const put = (key: string, value: Buffer, opts = {}) => store.put(ns, key, value, opts);
  await put("k".repeat(512), Buffer.from("ok"));
  // 512 bytes counts UTF-8 bytes, not characters.
  await assert.rejects(put("é".repeat(257), Buffer.from("x")), (e: EdgeError) => e.status === 414 && code(e) === 10033);
  await assert.rejects(put("", Buffer.from("x")), (e: EdgeError) => e.status === 400 && code(e) === 10020);
  await assert.rejects(put("..", Buffer.from("x")), (e: EdgeError) => code(e) === 10020);
  await assert.rejects(put("v", Buffer.alloc(KV_LIMITS.valueBytes + 1)), (e: EdgeError) => e.status === 413 && code(e) === 10029);
  await assert.rejects(put("m", Buffer.from("x"), { metadata: { s: "x".repeat(1020) } }), (e: EdgeError) => e.status === 413 && code(e) === 10018);
  await assert.rejects(put("t", Buffer.from("x"), { expirationTtl: 59 }), (e: EdgeError) => e.status === 400 && code(e) === 10025);
  await assert.rejects(put("t", Buffer.from("x"), { expiration: now() - 5 }), (e: EdgeError) => /in the past/.test(e.message) && code(e) === 10024);
  await assert.rejects(put("t", Buffer.from("x"), { expiration: now() + 30 }), (e: EdgeError) => code(e) === 10024);
  // TTL wins over expiration, as wrangler documents.
  await put("t", Buffer.from("x"), { expiration: now() - 5, expirationTtl: 60 });
  assert.deepEqual(
    store.list(ns, { prefix: "t" }).keys.map((k) => k.name),
    ["t"],
  );
  assert.equal(await store.get(ns, "v"), null);
  assert.throws(
    () => store.list(ns, { limit: 0 }),
    (e) => code(e) === 10027,
  );
  assert.throws(
    () => store.list(ns, { limit: 1001 }),
    (e) => code(e) === 10027,
  );
});

test("listing is in byte order, by prefix, across pages with an opaque cursor", async () => {
  const ns = (await store.createNamespace(ACCOUNT, "listing")).id;
  const keys = ["p/b", "p/a", "p/ä", "p/Z", "p/😀", "p0", "q", "p/"];
  for (const k of keys) await store.put(ns, k, Buffer.from(k));
  const all = store.list(ns, {});
  const byteOrder = [...keys].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
  assert.deepEqual(
    all.keys.map((k) => k.name),
    byteOrder,
  );
  assert.equal(all.list_complete, true);
  assert.equal(all.cursor, undefined);

  const seen: string[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const page = store.list(ns, { prefix: "p/", limit: 2, cursor });
    seen.push(...page.keys.map((k) => k.name));
    cursor = page.cursor;
    pages++;
    assert.equal(page.list_complete, cursor === undefined);
  } while (cursor);
  assert.deepEqual(
    seen,
    byteOrder.filter((k) => k.startsWith("p/")),
  );
  assert.equal(pages, 3);
  assert.throws(
    () => store.list(ns, { cursor: "not a cursor!" }),
    (e) => code(e) === 10030,
  );
});

test("expired keys are invisible at once and purged later", async () => {
  const ns = (await store.createNamespace(ACCOUNT, "expiry")).id;
  await store.put(ns, "soon", Buffer.from("x"), { expirationTtl: 60 });
  await store.put(ns, "big-soon", Buffer.alloc(KV_LIMITS.inlineValueBytes + 10), { expirationTtl: 60 });
  await store.put(ns, "keep", Buffer.from("y"));
  const files = contentFiles().length;
  // Pretend time moved on by purging "as of" two minutes from now: rows go, and their content files with them.
  assert.ok((await store.purgeExpired(now() + 120)) >= 2);
  assert.equal(contentFiles().length, files - 1);
  assert.deepEqual(
    store.list(ns).keys.map((k) => k.name),
    ["keep"],
  );
  assert.equal(await store.get(ns, "soon"), null);
});

test("bulk put and delete are all or nothing, errors name the entry", async () => {
  const ns = (await store.createNamespace(ACCOUNT, "bulk")).id;
  const entries = Array.from({ length: 5 }, (_, i) => ({ key: `k${i}`, value: Buffer.from(`v${i}`) }));
  entries[3] = { key: "k3", value: Buffer.from("x"), expirationTtl: 5 } as never;
  await assert.rejects(store.putMany(ns, entries), (e: EdgeError) => /^entry 3: expiration_ttl/.test(e.message));
  assert.equal(store.list(ns).keys.length, 0);
  entries[3] = { key: "k3", value: Buffer.from("v3") };
  await store.putMany(ns, entries);
  assert.equal(store.list(ns).keys.length, 5);
  await assert.rejects(
    () => store.deleteMany(ns, ["k0", "x".repeat(600)]),
    (e) => /^entry 1: /.test((e as Error).message),
  );
  assert.equal(store.list(ns).keys.length, 5);
  await store.deleteMany(ns, ["k0", "k1", "nope"]);
  assert.deepEqual(
    store.list(ns).keys.map((k) => k.name),
    ["k2", "k3", "k4"],
  );
  const many = await store.getMany(ns, ["k2", "nope"]);
  assert.equal(many.get("k2")?.value.toString(), "v2");
  assert.equal(many.get("nope"), null);
  await assert.rejects(store.putMany("0".repeat(32), entries), (e: EdgeError) => code(e) === 10013);
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
  const { FileContentStore } = await import("../core/content/file-store.js");
  const orphan = await new FileContentStore(join(dir, "content", "kv")).put(Buffer.from("left behind"));
  assert.ok(contentFiles().includes(orphan.id));
  await new Promise((r) => setTimeout(r, 20)); // gc takes files strictly older than the grace period
  assert.equal(await store.gcContent(0), 1);
  assert.ok(!contentFiles().includes(orphan.id));
  assert.equal((await store.get(ns, "live"))?.value.length, KV_LIMITS.inlineValueBytes + 1);
});
