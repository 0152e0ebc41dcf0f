import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { Readable } from "node:stream";
import { storeContract } from "../testing/contract.js";
import { ContentTooLargeError, type ContentStore } from "./store.js";

const md5 = (b: Buffer) => createHash("md5").update(b).digest("hex");
const sha256 = (b: Buffer) => createHash("sha256").update(b).digest("hex");

async function readStream(s: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of s) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** Removes and counts everything the store holds: with a grace period in the past, every unclaimed body is old. */
const countAll = (store: ContentStore) => store.gc(() => false, -60_000);

/** Bytes that differ along their length, so a wrong range shows. */
function pattern(n: number): Buffer {
  const b = Buffer.allocUnsafe(n);
  for (let i = 0; i < n; i++) b[i] = (i * 31 + (i >> 8)) & 0xff;
  return b;
}

/** What every ContentStore does (files: file-store.test.ts; S3: s3-store.test.ts). */
export const describeContentStore = storeContract<ContentStore>("ContentStore", (it) => {
  it("keeps a stream of unknown length (larger than one upload part) and a buffer, with their digests, and reads ranges", async (store) => {
    const big = pattern(9 * 1024 * 1024 + 5);
    const streamed = await store.put(Readable.from([big.subarray(0, 1000), big.subarray(1000, 5_000_000), big.subarray(5_000_000)]), { sha256: true });
    assert.deepEqual({ size: streamed.size, md5: streamed.md5, sha256: streamed.sha256 }, { size: big.length, md5: md5(big), sha256: sha256(big) });
    assert.match(streamed.id, /^[0-9a-f]{40}$/);
    assert.ok((await store.readAll(streamed.id)).equals(big));
    assert.ok(
      (await readStream(store.read(streamed.id, { offset: 8 * 1024 * 1024 - 3, length: 10 }))).equals(big.subarray(8 * 1024 * 1024 - 3, 8 * 1024 * 1024 + 7)),
    );
    assert.equal((await readStream(store.read(streamed.id, { offset: 5, length: 0 }))).length, 0);

    const small = Buffer.from("a small body");
    const put = await store.put(small);
    assert.deepEqual({ size: put.size, md5: put.md5, sha256: put.sha256 }, { size: small.length, md5: md5(small), sha256: undefined });
    assert.ok((await readStream(store.read(put.id))).equals(small));
    assert.notEqual(put.id, streamed.id);
  });

  it("refuses a body over the limit and keeps nothing of it, however far it got", async (store) => {
    await assert.rejects(store.put(Buffer.alloc(2048), { maxBytes: 1024 }), ContentTooLargeError);
    await assert.rejects(store.put(Readable.from([Buffer.alloc(2048)]), { maxBytes: 1024 }), ContentTooLargeError);
    // Past the first part of a multipart upload before the limit is hit.
    const chunks = Array.from({ length: 12 }, () => Buffer.alloc(1024 * 1024, 1));
    await assert.rejects(store.put(Readable.from(chunks), { maxBytes: 10 * 1024 * 1024 }), ContentTooLargeError);
    const exact = await store.put(Readable.from([Buffer.alloc(1024)]), { maxBytes: 1024 });
    assert.equal(exact.size, 1024);
    assert.equal(await countAll(store), 1, "only the body within its limit");
  });

  it("a source that fails leaves nothing", async (store) => {
    async function* broken() {
      yield Buffer.alloc(64 * 1024, 2);
      throw new Error("client went away");
    }
    await assert.rejects(store.put(Readable.from(broken())), /client went away/);
    assert.equal(await countAll(store), 0);
  });

  it("deletes, and reading what is not there fails with ENOENT", async (store) => {
    const put = await store.put(Buffer.from("short-lived"));
    await store.delete(put.id);
    await store.delete(put.id);
    await assert.rejects(store.readAll(put.id), (e: NodeJS.ErrnoException) => e.code === "ENOENT");
    await assert.rejects(readStream(store.read(put.id)), (e: NodeJS.ErrnoException) => e.code === "ENOENT");
    await assert.rejects(async () => store.readAll("../../etc/passwd"), /invalid content id/);
  });

  it("gc removes bodies no row claims once older than the grace period, and nothing else", async (store) => {
    const live = await store.put(Buffer.from("claimed"));
    const orphan = await store.put(Buffer.from("never committed"));
    const isLive = async (id: string) => id === live.id;
    assert.equal(await store.gc(isLive, 3600_000), 0, "young bodies are kept: their row may be committing now");
    assert.equal(await store.gc(isLive, -60_000), 1);
    await assert.rejects(store.readAll(orphan.id), (e: NodeJS.ErrnoException) => e.code === "ENOENT");
    assert.equal((await store.readAll(live.id)).toString(), "claimed");
  });
});
