import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, readdirSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { createHash } from "node:crypto";
import { FileContentStore } from "./file-store.js";
import { ContentTooLargeError } from "./store.js";
import { describeContentStore } from "./store.contract.js";

describeContentStore("files", async () => {
  const root = mkdtempSync(join(tmpdir(), "edge-content-"));
  return { store: new FileContentStore(root), close: () => rmSync(root, { recursive: true, force: true }) };
});

test("streams in with digests, reads ranges, refuses oversize without leaving files, collects orphans", async () => {
  const root = mkdtempSync(join(tmpdir(), "edge-content-"));
  try {
    const store = new FileContentStore(root);
    const data = Buffer.alloc(3 * 1024 * 1024 + 5, 7);
    const put = await store.put(Readable.from([data.subarray(0, 1000), data.subarray(1000)]), { sha256: true });
    assert.equal(put.size, data.length);
    assert.equal(put.md5, createHash("md5").update(data).digest("hex"));
    assert.equal(put.sha256, createHash("sha256").update(data).digest("hex"));
    assert.deepEqual(await store.readAll(put.id), data);
    const chunks: Buffer[] = [];
    for await (const c of store.read(put.id, { offset: 10, length: 5 })) chunks.push(c as Buffer);
    assert.equal(Buffer.concat(chunks).length, 5);

    const small = Buffer.from("a buffer, written without blocking");
    const putBuf = await store.put(small, { sha256: true });
    assert.equal(putBuf.size, small.length);
    assert.equal(putBuf.md5, createHash("md5").update(small).digest("hex"));
    assert.equal(putBuf.sha256, createHash("sha256").update(small).digest("hex"));
    assert.deepEqual(await store.readAll(putBuf.id), small);

    await assert.rejects(store.put(Readable.from([Buffer.alloc(2048)]), { maxBytes: 1024 }), ContentTooLargeError);
    await assert.rejects(store.put(Buffer.alloc(2048), { maxBytes: 1024 }), ContentTooLargeError);
    assert.deepEqual(readdirSync(join(root, "tmp")), [], "no temporary file left behind");

    const orphan = await store.put(Buffer.from("orphan"));
    const old = new Date(Date.now() - 2 * 3600_000);
    utimesSync(join(root, orphan.id.slice(0, 2), orphan.id), old, old);
    writeFileSync(join(root, "tmp", "stale"), "x");
    utimesSync(join(root, "tmp", "stale"), old, old);
    const removed = await store.gc((id) => id === put.id || id === putBuf.id);
    assert.equal(removed, 2);
    await assert.rejects(store.readAll(orphan.id));
    assert.equal((await store.readAll(put.id)).length, data.length);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test("a shard directory removed by hand after its first use is made again by the next put into it", async () => {
  const root = mkdtempSync(join(tmpdir(), "edge-content-"));
  try {
    const store = new FileContentStore(root);
    const first = await store.put(Buffer.from("first"));
    const shard = first.id.slice(0, 2);
    rmSync(join(root, shard), { recursive: true, force: true });
    // Ids are random: put until one lands in the removed shard (256 shards, so a few hundred puts on average).
    let again: { id: string; body: string } | undefined;
    for (let i = 0; i < 20_000 && !again; i++) {
      const body = `body ${i}`;
      const put = await store.put(Buffer.from(body));
      if (put.id.startsWith(shard)) again = { id: put.id, body };
    }
    assert.ok(again, "no put landed in the removed shard");
    assert.equal((await store.readAll(again.id)).toString(), again.body);
    assert.deepEqual(readdirSync(join(root, "tmp")), [], "no temporary file left behind");
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test("a source that fails before its file is even opened leaves no temporary file (the removal waits for the close)", async () => {
  const root = mkdtempSync(join(tmpdir(), "edge-content-early-"));
  try {
    const store = new FileContentStore(root);
    for (let i = 0; i < 50; i++) {
      const failing = new Readable({ read: () => undefined });
      process.nextTick(() => failing.destroy(new Error("client went away")));
      await assert.rejects(store.put(failing), /client went away/);
    }
    assert.deepEqual(readdirSync(join(root, "tmp")), []);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
