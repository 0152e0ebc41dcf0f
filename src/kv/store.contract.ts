import assert from "node:assert/strict";
import type { EdgeError } from "../core/errors.js";
import { storeContract } from "../core/testing/contract.js";
import { KvCodes } from "./errors.js";
import { KV_LIMITS } from "./limits.js";
import type { KvStore } from "./store.js";

const ACCOUNT = "a".repeat(32);
const OTHER = "b".repeat(32);

const now = () => Math.floor(Date.now() / 1000);
const code = (e: unknown) => (e as EdgeError).errors[0]!.code;
/** A check for assert.rejects: the refusal has this status and code (and its message matches `message`). */
const refusal = (status: number, errCode: number, message?: RegExp) => (e: unknown) =>
  (e as EdgeError).status === status && code(e) === errCode && (message === undefined || message.test((e as Error).message));
const names = async (store: KvStore, ns: string, prefix?: string) => (await store.list(ns, { prefix })).keys.map((k) => k.name);

/**
 * Content the store no longer names and did not delete. Content stores collect only what is older than the grace
 * period, so the files are given a moment to be strictly older than "now".
 */
async function leftOverContent(store: KvStore): Promise<number> {
  await new Promise((resolve) => setTimeout(resolve, 20));
  return store.gcContent(0);
}

/** What every KvStore does, whatever keeps the data (run by sqlite-store.test.ts). */
export const describeKvStore = storeContract<KvStore>("KvStore", (it) => {
  it("namespaces: created with a fresh id, titles unique per account, listed in order with a total, renamed, deleted", async (store) => {
    const a = await store.createNamespace(ACCOUNT, "b-title");
    const b = await store.createNamespace(ACCOUNT, "a-title");
    assert.match(a.id, /^[0-9a-f]{32}$/);
    assert.deepEqual(a, { id: a.id, title: "b-title", supports_url_encoding: true });
    assert.deepEqual(await store.getNamespace(ACCOUNT, a.id), a);
    await assert.rejects(store.createNamespace(ACCOUNT, "b-title"), refusal(400, KvCodes.titleExists));
    // The same title in another account is fine, and each account sees only its own.
    const theirs = await store.createNamespace(OTHER, "b-title");
    assert.equal(await store.getNamespace(ACCOUNT, theirs.id), undefined);

    const byTitle = await store.listNamespaces(ACCOUNT, { order: "title" });
    assert.deepEqual(
      byTitle.namespaces.map((n) => n.title),
      ["a-title", "b-title"],
    );
    assert.equal(byTitle.total, 2);
    const desc = await store.listNamespaces(ACCOUNT, { order: "title", direction: "desc", offset: 1, limit: 1 });
    assert.deepEqual(
      desc.namespaces.map((n) => n.title),
      ["a-title"],
    );
    assert.equal(desc.total, 2, "the total counts every namespace, not the page");
    assert.deepEqual(
      (await store.listNamespaces(ACCOUNT)).namespaces.map((n) => n.id),
      [a.id, b.id].sort(),
      "by id when no order is asked for",
    );
    assert.deepEqual((await store.listNamespaces(ACCOUNT, { offset: 2, limit: 10 })).namespaces, [], "past the end is an empty page");

    await assert.rejects(store.renameNamespace(ACCOUNT, a.id, "a-title"), refusal(400, KvCodes.titleExists));
    assert.equal((await store.renameNamespace(ACCOUNT, a.id, "c-title")).title, "c-title");
    assert.equal((await store.getNamespace(ACCOUNT, a.id))?.title, "c-title");
    await assert.rejects(store.renameNamespace(OTHER, a.id, "x"), refusal(404, KvCodes.namespaceNotFound));
    await assert.rejects(store.createNamespace(ACCOUNT, " "), refusal(400, KvCodes.invalidTitle));

    await store.deleteNamespace(ACCOUNT, b.id);
    assert.equal(await store.getNamespace(ACCOUNT, b.id), undefined);
    await assert.rejects(store.deleteNamespace(ACCOUNT, b.id), refusal(404, KvCodes.namespaceNotFound));
    await assert.rejects(store.deleteNamespace(ACCOUNT, theirs.id), refusal(404, KvCodes.namespaceNotFound), "not another account's");
  });

  it("values round-trip byte for byte, with metadata and expiration; a missing key is null", async (store) => {
    const ns = (await store.createNamespace(ACCOUNT, "values")).id;
    const bin = Buffer.from([0, 255, 1, 128, 10, 13]);
    await store.put(ns, "bin", bin, { metadata: { a: "é" }, expirationTtl: 3600 });
    const got = await store.get(ns, "bin");
    assert.deepEqual(got?.value, bin);
    assert.deepEqual(got?.metadata, { a: "é" });
    assert.ok(got!.expiration! >= now() + 3599);
    const at = now() + 7200;
    await store.put(ns, "plain", Buffer.from("v"), { expiration: at });
    assert.deepEqual(await store.get(ns, "plain"), { value: Buffer.from("v"), metadata: null, expiration: at });
    await store.put(ns, "empty", Buffer.alloc(0));
    assert.deepEqual(await store.get(ns, "empty"), { value: Buffer.alloc(0), metadata: null, expiration: null });
    assert.equal(await store.get(ns, "missing"), null);
    await store.delete(ns, "missing");
    await assert.rejects(store.put("0".repeat(32), "k", Buffer.from("v")), refusal(404, KvCodes.namespaceNotFound));
  });

  it("limits: key length and names, value size, metadata size, ttl and expiration, list limit", async (store) => {
    const ns = (await store.createNamespace(ACCOUNT, "limits")).id;
    const put = (key: string, value: Buffer, opts = {}) => store.put(ns, key, value, opts);
    await put("k".repeat(512), Buffer.from("ok"));
    // 512 bytes counts UTF-8 bytes, not characters.
    await assert.rejects(put("é".repeat(257), Buffer.from("x")), refusal(414, KvCodes.keyTooLong));
    await assert.rejects(put("", Buffer.from("x")), refusal(400, KvCodes.invalidKey));
    await assert.rejects(put("..", Buffer.from("x")), refusal(400, KvCodes.invalidKey));
    await assert.rejects(put("v", Buffer.alloc(KV_LIMITS.valueBytes + 1)), refusal(413, KvCodes.valueTooLarge));
    await assert.rejects(put("m", Buffer.from("x"), { metadata: { s: "x".repeat(1020) } }), refusal(413, KvCodes.metadataTooLarge));
    await assert.rejects(put("t", Buffer.from("x"), { expirationTtl: 59 }), refusal(400, KvCodes.invalidTtl));
    await assert.rejects(put("t", Buffer.from("x"), { expiration: now() - 5 }), refusal(400, KvCodes.invalidExpiration, /in the past/));
    await assert.rejects(put("t", Buffer.from("x"), { expiration: now() + 30 }), refusal(400, KvCodes.invalidExpiration));
    await assert.rejects(store.get(ns, ""), refusal(400, KvCodes.invalidKey));
    // TTL wins over expiration, as wrangler documents.
    await put("t", Buffer.from("x"), { expiration: now() - 5, expirationTtl: 60 });
    assert.deepEqual(await names(store, ns, "t"), ["t"]);
    assert.equal(await store.get(ns, "v"), null, "nothing is written on a refusal");
    await assert.rejects(store.list(ns, { limit: 0 }), refusal(400, KvCodes.invalidLimit));
    await assert.rejects(store.list(ns, { limit: 1001 }), refusal(400, KvCodes.invalidLimit));
  });

  it("listing is in UTF-8 byte order, by prefix, across pages with an opaque cursor", async (store) => {
    const ns = (await store.createNamespace(ACCOUNT, "listing")).id;
    const keys = ["p/b", "p/a", "p/ä", "p/Z", "p/😀", "p0", "q", "p/"];
    for (const k of keys) await store.put(ns, k, Buffer.from(k), k === "p/a" ? { metadata: { m: 1 }, expirationTtl: 600 } : {});
    const all = await store.list(ns, {});
    const byteOrder = [...keys].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
    assert.deepEqual(
      all.keys.map((k) => k.name),
      byteOrder,
    );
    assert.equal(all.list_complete, true);
    assert.equal(all.cursor, undefined);
    const withMeta = all.keys.find((k) => k.name === "p/a")!;
    assert.deepEqual(withMeta.metadata, { m: 1 });
    assert.ok(withMeta.expiration! >= now() + 599);
    assert.deepEqual(
      all.keys.find((k) => k.name === "q"),
      { name: "q" },
      "no metadata or expiration fields when there are none",
    );

    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await store.list(ns, { prefix: "p/", limit: 2, cursor });
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
    await assert.rejects(store.list(ns, { cursor: "not a cursor!" }), refusal(400, KvCodes.invalidCursor));
  });

  it("expired keys are gone from reads and listings, and purged", async (store) => {
    const ns = (await store.createNamespace(ACCOUNT, "expiry")).id;
    await store.put(ns, "soon", Buffer.from("x"), { expirationTtl: 60 });
    await store.put(ns, "big-soon", Buffer.alloc(KV_LIMITS.inlineValueBytes + 10), { expirationTtl: 60 });
    await store.put(ns, "keep", Buffer.from("y"));
    // Pretend time moved on by purging "as of" two minutes from now.
    assert.equal(await store.purgeExpired(now() + 120), 2);
    assert.deepEqual(await names(store, ns), ["keep"]);
    assert.equal(await store.get(ns, "soon"), null);
    assert.equal(await store.get(ns, "big-soon"), null);
    assert.equal(await store.purgeExpired(now() + 120), 0);
    assert.equal(await leftOverContent(store), 0, "the purge deleted the big value's content");
  });

  it("bulk put and delete are all or nothing, refusals name the entry; bulk get answers every key once", async (store) => {
    const ns = (await store.createNamespace(ACCOUNT, "bulk")).id;
    const entries = Array.from({ length: 5 }, (_, i) => ({ key: `k${i}`, value: Buffer.from(`v${i}`) }));
    entries[3] = { key: "k3", value: Buffer.from("x"), expirationTtl: 5 } as never;
    await assert.rejects(store.putMany(ns, entries), refusal(400, KvCodes.invalidTtl, /^entry 3: expiration_ttl/));
    assert.equal((await store.list(ns)).keys.length, 0);
    entries[3] = { key: "k3", value: Buffer.from("v3") };
    await store.putMany(ns, entries);
    assert.equal((await store.list(ns)).keys.length, 5);
    const tooMany = Array.from({ length: KV_LIMITS.bulkWriteEntries + 1 }, (_, i) => ({ key: `many${i}`, value: Buffer.from("v") }));
    await assert.rejects(store.putMany(ns, tooMany), refusal(413, KvCodes.tooManyEntries));
    assert.equal((await store.list(ns)).keys.length, 5);

    await assert.rejects(store.deleteMany(ns, ["k0", "x".repeat(600)]), refusal(414, KvCodes.keyTooLong, /^entry 1: /));
    assert.equal((await store.list(ns)).keys.length, 5);
    await store.deleteMany(ns, ["k0", "k1", "nope"]);
    assert.deepEqual(await names(store, ns), ["k2", "k3", "k4"]);

    const many = await store.getMany(ns, ["k2", "nope", "k2"]);
    assert.deepEqual([...many.keys()], ["k2", "nope"]);
    assert.equal(many.get("k2")?.value.toString(), "v2");
    assert.equal(many.get("nope"), null);
    await assert.rejects(store.getMany(ns, ["k2", ""]), refusal(400, KvCodes.invalidKey, /^keys\[1\]: /));
    await assert.rejects(store.putMany("0".repeat(32), entries), refusal(404, KvCodes.namespaceNotFound));
  });

  it("large values: up to 25 MiB round-trip; their content goes when the entry is overwritten, deleted or its namespace deleted", async (store) => {
    const ns = (await store.createNamespace(ACCOUNT, "large")).id;
    const largest = Buffer.alloc(KV_LIMITS.valueBytes, 0xab);
    largest.write("start", 0);
    await store.put(ns, "largest", largest);
    assert.ok((await store.get(ns, "largest"))!.value.equals(largest));

    const big = Buffer.alloc(KV_LIMITS.inlineValueBytes + 1, 7);
    await store.put(ns, "big", big, { metadata: { big: true } });
    assert.deepEqual(await store.get(ns, "big"), { value: big, metadata: { big: true }, expiration: null });
    await store.put(ns, "big", Buffer.from("small"));
    assert.equal((await store.get(ns, "big"))?.value.toString(), "small");
    await store.put(ns, "big", big);
    await store.delete(ns, "big");
    assert.equal(await store.get(ns, "big"), null);
    await store.putMany(ns, [
      { key: "bulk-big", value: big },
      { key: "bulk-small", value: Buffer.from("s") },
    ]);
    await store.deleteMany(ns, ["bulk-big"]);
    assert.equal(await leftOverContent(store), 0, "overwrites and deletes deleted the content they replaced");
    assert.ok((await store.get(ns, "largest"))!.value.equals(largest), "and kept what entries still name");

    await store.put(ns, "again", big);
    await store.deleteNamespace(ACCOUNT, ns);
    assert.equal(await store.get(ns, "largest"), null);
    assert.equal(await leftOverContent(store), 0, "deleting the namespace deleted its entries' content");
  });
});
