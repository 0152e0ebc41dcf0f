import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FileContentStore } from "../../core/content/file-store.js";
import { openDatabase, type Db } from "../../core/db/sqlite.js";
import { EdgeError } from "../../core/errors.js";
import { KV_LIMITS } from "../limits.js";
import { KV_MIGRATIONS } from "../sqlite-migrations.js";
import { SqliteKvStore } from "../sqlite-store.js";
import { jsonArrayElements } from "./json-array-stream.js";
import { bulkPut, type BulkPutIo } from "./sqlite-put.js";
import { BulkStaging } from "./sqlite-staging.js";

// The bulk put as the writer thread runs it, here on this thread: its own connection (as the thread has), the
// store's connection for everything else, and the real JSON stream parser fed in small chunks.
let dir: string;
let db: Db;
let staging: BulkStaging;
let store: SqliteKvStore;
let io: BulkPutIo;
const ACCOUNT = "b".repeat(32);

before(() => {
  dir = mkdtempSync(join(tmpdir(), "kv-bulk-"));
  const file = join(dir, "kv.sqlite");
  db = openDatabase(file, KV_MIGRATIONS);
  const content = new FileContentStore(join(dir, "content"));
  store = new SqliteKvStore(db, content);
  staging = new BulkStaging(openDatabase(file, KV_MIGRATIONS));
  io = {
    exclusive: (fn) => store.exclusive(fn),
    putContent: async (value) => (await content.put(value)).id,
    dropContent: (ids) => store.dropContent(ids),
  };
});
after(() => rmSync(dir, { recursive: true, force: true }));

const count = (sql: string) => (db.prepare(sql).get() as { n: number }).n;
const blobs = () => count("SELECT count(*) AS n FROM blobs");
const contentFiles = () =>
  readdirSync(join(dir, "content"))
    .filter((d) => d !== "tmp")
    .flatMap((d) => readdirSync(join(dir, "content", d))).length;

/** A body sent in `size`-byte pieces, so entries and strings straddle chunk boundaries. */
async function* chunked(body: string | Buffer, size = 1000): AsyncGenerator<Uint8Array> {
  const bytes = Buffer.from(body);
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

const put = (ns: string, body: string, size?: number) => bulkPut(staging, io, ns, jsonArrayElements(chunked(body, size), 100 * 1024 * 1024));
const entries = (n: number, value = (i: number) => `value-${i}-${"x".repeat(2000)}`) =>
  Array.from({ length: n }, (_, i) => ({ key: `k${i}`, value: value(i) }));
const code = (e: unknown) => (e as EdgeError).errors[0]!.code;

test("a streamed bulk put writes every entry: small values as staged blobs, big ones in the content store", async () => {
  const ns = (await store.createNamespace(ACCOUNT, "written")).id;
  const big = Buffer.alloc(KV_LIMITS.inlineValueBytes + 10, 7);
  const body = JSON.stringify([
    ...entries(1200),
    { key: "big", value: big.toString("base64"), base64: true, metadata: { m: 1 }, expiration_ttl: 600 },
    { key: "é/ü", value: "unicode ✓" },
  ]);
  assert.equal(await put(ns, body, 777), 1202);
  assert.equal((await store.get(ns, "k1199"))?.value.toString(), `value-1199-${"x".repeat(2000)}`);
  const bigEntry = await store.get(ns, "big");
  assert.deepEqual(bigEntry?.value, big);
  assert.deepEqual(bigEntry?.metadata, { m: 1 });
  assert.ok(bigEntry!.expiration! > Date.now() / 1000);
  assert.equal((await store.get(ns, "é/ü"))?.value.toString(), "unicode ✓");
  assert.equal(blobs(), 1201, "every small value is a blob");
  assert.equal(count("SELECT count(*) AS n FROM bulk_writes"), 0, "the bulk write is finished");
});

test("a blob goes with its entry: overwritten, deleted, expired or its namespace deleted", async () => {
  const ns = (await store.createNamespace(ACCOUNT, "blob-life")).id;
  const before = blobs();
  await put(ns, JSON.stringify(entries(6)));
  assert.equal(blobs(), before + 6);
  await put(ns, JSON.stringify([{ key: "k0", value: "again, from a bulk put" }]));
  assert.equal(blobs(), before + 6, "a bulk put over a bulk-written key replaces its blob");
  await store.put(ns, "k1", Buffer.from("inline now"));
  assert.equal((await store.get(ns, "k1"))?.value.toString(), "inline now");
  await store.delete(ns, "k2");
  await store.deleteMany(ns, ["k3"]);
  assert.equal(blobs(), before + 3);
  await put(ns, JSON.stringify([{ key: "k4", value: "short-lived", expiration_ttl: 60 }]));
  await store.purgeExpired(Math.floor(Date.now() / 1000) + 120);
  assert.equal(await store.get(ns, "k4"), null);
  assert.equal(blobs(), before + 2);
  await store.deleteNamespace(ACCOUNT, ns);
  assert.equal(blobs(), before);
});

test("a bad entry after many staged batches writes nothing and leaves nothing staged; the first bad entry is named", async () => {
  const ns = (await store.createNamespace(ACCOUNT, "atomic")).id;
  const before = { blobs: blobs(), files: contentFiles() };
  const bad = [
    ...entries(1500),
    { key: "big", value: "y".repeat(KV_LIMITS.inlineValueBytes + 1) },
    { key: "late", value: "v", expiration_ttl: 10 },
    { key: "later", value: 5 },
  ];
  await assert.rejects(put(ns, JSON.stringify(bad)), (e: EdgeError) => e.status === 400 && code(e) === 10025 && /^entry 1501: expiration_ttl/.test(e.message));
  assert.equal((await store.list(ns)).keys.length, 0);
  assert.deepEqual({ blobs: blobs(), files: contentFiles() }, before);
  assert.equal(count("SELECT count(*) AS n FROM bulk_writes"), 0);
  // Too many entries outranks a bad entry, as it always did.
  const tooMany = [{ key: "", value: "x" }, ...entries(KV_LIMITS.bulkWriteEntries, () => "")];
  await assert.rejects(put(ns, JSON.stringify(tooMany)), (e: EdgeError) => e.status === 413 && code(e) === 10026);
  await assert.rejects(put(ns, JSON.stringify([{ key: "k".repeat(600), value: "x" }])), (e: EdgeError) => e.status === 414 && code(e) === 10033);
  assert.equal(blobs(), before.blobs);
});

test("a body that stops arriving writes nothing and leaves nothing staged", async () => {
  const ns = (await store.createNamespace(ACCOUNT, "cut")).id;
  const before = blobs();
  const body = JSON.stringify(entries(2000));
  async function* cut(): AsyncGenerator<Uint8Array> {
    yield* chunked(body.slice(0, body.length - 5000));
    throw new Error("aborted");
  }
  await assert.rejects(bulkPut(staging, io, ns, jsonArrayElements(cut(), 1e9)), /aborted/);
  assert.equal((await store.list(ns)).keys.length, 0);
  assert.equal(blobs(), before);
});

test("a namespace deleted while its bulk put streams in: 404, nothing written, nothing staged", async () => {
  const ns = (await store.createNamespace(ACCOUNT, "vanishing")).id;
  const before = blobs();
  const body = JSON.stringify(entries(1500));
  async function* deletedHalfway(): AsyncGenerator<Uint8Array> {
    const bytes = Buffer.from(body);
    yield bytes.subarray(0, bytes.length / 2);
    await store.deleteNamespace(ACCOUNT, ns);
    yield bytes.subarray(bytes.length / 2);
  }
  await assert.rejects(bulkPut(staging, io, ns, jsonArrayElements(deletedHalfway(), 1e9)), (e: EdgeError) => e.status === 404 && code(e) === 10013);
  assert.equal(blobs(), before);
});

test("what a crashed run staged is removed by abandonLeftovers, and nothing else", async () => {
  const ns = (await store.createNamespace(ACCOUNT, "leftovers")).id;
  await put(ns, JSON.stringify(entries(3)));
  const committed = blobs();
  const id = staging.begin();
  staging.stage(id, [Buffer.from("staged, never committed"), Buffer.from("another")]);
  assert.equal(blobs(), committed + 2);
  // A new connection, as after a restart.
  const reopened = new BulkStaging(openDatabase(join(dir, "kv.sqlite"), KV_MIGRATIONS));
  assert.equal(reopened.abandonLeftovers(), 1);
  assert.equal(blobs(), committed);
  assert.equal((await store.get(ns, "k2"))?.value.toString(), `value-2-${"x".repeat(2000)}`);
});

test("jsonArrayElements: elements across chunk boundaries; __proto__ keys, deep nesting and each malformed body refused", async () => {
  const collect = async (body: string | Buffer, size = 1, limit = 1e6) => {
    const out: unknown[] = [];
    for await (const e of jsonArrayElements(chunked(body, size), limit)) out.push(e);
    return out;
  };
  const parsed = await collect(' \n[{"key":"a\\"]}","value":"\\u00e9"}, 5, "s", [1, {"x": null}], {"constructor": "c", "prototype": "p"}] \n');
  assert.deepEqual<unknown[]>(parsed, [{ key: 'a"]}', value: "é" }, 5, "s", [1, { x: null }], { constructor: "c", prototype: "p" }]);
  assert.deepEqual(await collect("[]"), []);
  const refused = async (body: string | Buffer, status: number, errCode: number, limit?: number) =>
    assert.rejects(collect(body, 3, limit), (e: EdgeError) => e.status === status && code(e) === errCode);
  // The rules of every user JSON body (parseUserJson), element by element.
  await refused('[{"key": "k", "value": "v", "__proto__": {"value": "x"}}]', 400, 6007);
  await refused('[{"key": "k", "value": "v", "metadata": {"constructor": {"prototype": {}}}}]', 400, 6007);
  await refused(`[${"[".repeat(70)}${"]".repeat(70)}]`, 400, 6007);
  await refused("", 400, 10001);
  await refused("   ", 400, 10001);
  await refused('{"key": "a"}', 400, 10001);
  await refused("[{", 400, 6007);
  await refused('[{"key" 1}]', 400, 6007);
  await refused("[1] [2]", 400, 6007);
  await refused(`[${'"x",'.repeat(100)}"x"]`, 413, 10413, 100);
  await refused(Buffer.from([0x5b, 0x22, 0xff, 0xfe, 0x22, 0x5d]), 400, 6007, undefined); // invalid UTF-8 in a string
});

test("a staged blob is invisible until the commit names it", async () => {
  const ns = (await store.createNamespace(ACCOUNT, "visibility")).id;
  const id = staging.begin();
  const [blobId] = staging.stage(id, [Buffer.from("not yet")]);
  assert.equal((await store.list(ns)).keys.length, 0);
  staging.commit(id, ns, [{ key: Buffer.from("now"), expiration: null, metadata: null, size: 7, value: null, contentId: null, blobId: blobId! }]);
  assert.equal((await store.get(ns, "now"))?.value.toString(), "not yet");
  assert.equal(count("SELECT count(*) AS n FROM bulk_writes"), 0);
});
