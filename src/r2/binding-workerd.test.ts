import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FileContentStore } from "../core/content/file-store.js";
import { startBoundWorkerd, type BoundWorkerd } from "../workers/testing/bound-workerd.js";
import { openDatabase, type Db } from "../core/db/sqlite.js";
import { createR2BindingHandler } from "./binding.js";
import { r2Migrations } from "./sqlite-migrations.js";
import { SqliteR2Store } from "./sqlite-store.js";

/**
 * The binding backend behind a real workerd: a script calls env.B.* and we check what it sees. This is
 * the check that our reading of the protocol matches the runtime (numbers, 412s, ranges, multipart).
 */
const WORKER = `
export default {
  async fetch(req, env) {
    const out = {};
    const enc = (s) => new TextEncoder().encode(s);
    const put = await env.B.put("wörk/é.txt", "hello from workerd", {
      httpMetadata: { contentType: "text/plain", cacheControl: "no-cache" },
      customMetadata: { who: "zoë" },
    });
    out.put = { key: put.key, size: put.size, etag: put.etag, httpEtag: put.httpEtag, uploadedIsDate: put.uploaded instanceof Date };
    const got = await env.B.get("wörk/é.txt");
    out.get = { text: await got.text(), contentType: got.httpMetadata.contentType, who: got.customMetadata.who, version: got.version };
    const h = new Headers();
    got.writeHttpMetadata(h);
    out.headers = Object.fromEntries(h);
    out.missing = await env.B.get("nope");
    out.headMissing = await env.B.head("nope");
    const range = await env.B.get("wörk/é.txt", { range: { offset: 6, length: 4 } });
    out.range = { text: await range.text(), range: range.range };
    const suffix = await env.B.get("wörk/é.txt", { range: { suffix: 7 } });
    out.suffix = await suffix.text();
    const cond = await env.B.get("wörk/é.txt", { onlyIf: { etagDoesNotMatch: put.etag } });
    out.condHasBody = "body" in cond;
    out.condEtag = cond.etag;
    const condHeaders = await env.B.get("wörk/é.txt", { onlyIf: new Headers({ "if-match": put.httpEtag }) });
    out.condHeadersText = await condHeaders.text();
    out.refusedPut = await env.B.put("wörk/é.txt", "x", { onlyIf: { etagMatches: "0000" } });
    try { await env.B.get("wörk/é.txt", { range: { offset: 1000 } }); out.badRange = "no error"; } catch (e) { out.badRange = e.message; }
    try { await env.B.put("m", "x", { md5: "00000000000000000000000000000000" }); out.badMd5 = "no error"; } catch (e) { out.badMd5 = e.message; }
    for (const k of ["dir/a", "dir/b", "dir/sub/c"]) await env.B.put(k, k);
    const listed = await env.B.list({ prefix: "dir/", delimiter: "/", include: ["httpMetadata", "customMetadata"] });
    out.list = { keys: listed.objects.map((o) => o.key), prefixes: listed.delimitedPrefixes, truncated: listed.truncated };
    const page = await env.B.list({ limit: 1 });
    const next = await env.B.list({ limit: 10, cursor: page.cursor });
    out.paged = { first: page.objects.map((o) => o.key), truncated: page.truncated, rest: next.objects.map((o) => o.key) };
    await env.B.delete(["dir/a", "dir/b"]);
    await env.B.delete("dir/sub/c");
    out.afterDelete = (await env.B.list({ prefix: "dir/" })).objects.length;
    const mp = await env.B.createMultipartUpload("multi", { httpMetadata: { contentType: "application/x-mp" } });
    const p1 = await mp.uploadPart(1, new Uint8Array(5 * 1024 * 1024).fill(65));
    const p2 = await mp.uploadPart(2, "tail");
    const done = await mp.complete([p1, p2]);
    out.multipart = { etag: done.etag, size: done.size, tail: await (await env.B.get("multi", { range: { suffix: 4 } })).text() };
    const mp2 = await env.B.createMultipartUpload("aborted");
    await mp2.abort();
    try { await mp2.uploadPart(1, "x"); out.afterAbort = "no error"; } catch (e) { out.afterAbort = e.message; }
    return Response.json(out);
  },
};
`;

let dir: string;
let db: Db;
let workerd: BoundWorkerd;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), "r2-workerd-"));
  db = openDatabase(join(dir, "r2.sqlite"), r2Migrations);
  const store = new SqliteR2Store(db, new FileContentStore(join(dir, "content")));
  await store.createBucket("acc", "bkt");
  const handler = createR2BindingHandler(store);
  workerd = await startBoundWorkerd({
    script: WORKER,
    binding: { name: "B", kind: "r2Bucket" },
    compatibilityDate: "2024-09-23",
    handler: (req, res) => handler({ accountId: "acc", bucketName: "bkt" }, req, res),
  });
});
after(async () => {
  await workerd?.stop();
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

test("a real workerd script sees the R2 API semantics through our backend", async () => {
  const res = await workerd.fetch("/");
  const text = await res.text();
  assert.equal(res.status, 200, text);
  const out = JSON.parse(text);
  assert.equal(out.put.key, "wörk/é.txt");
  assert.equal(out.put.size, 18);
  assert.match(out.put.etag, /^[0-9a-f]{32}$/);
  assert.equal(out.put.httpEtag, `"${out.put.etag}"`);
  assert.equal(out.put.uploadedIsDate, true);
  assert.deepEqual(out.get, { text: "hello from workerd", contentType: "text/plain", who: "zoë", version: out.get.version });
  assert.equal(out.headers["content-type"], "text/plain");
  assert.equal(out.headers["cache-control"], "no-cache");
  assert.equal(out.missing, null);
  assert.equal(out.headMissing, null);
  assert.deepEqual(out.range, { text: "from", range: { offset: 6, length: 4 } });
  assert.equal(out.suffix, "workerd");
  assert.equal(out.condHasBody, false, "a failed precondition gives a body-less object");
  assert.equal(out.condEtag, out.put.etag);
  assert.equal(out.condHeadersText, "hello from workerd");
  assert.equal(out.refusedPut, null, "a failed put precondition returns null");
  assert.match(out.badRange, /10039/);
  assert.match(out.badMd5, /10037/);
  assert.deepEqual(out.list, { keys: ["dir/a", "dir/b"], prefixes: ["dir/sub/"], truncated: false });
  assert.equal(out.paged.truncated, true);
  assert.equal(out.paged.first.length, 1);
  assert.equal(out.paged.rest.length + 1, 4, "every object once across the two pages (the refused put stored nothing)");
  assert.equal(out.afterDelete, 0);
  assert.match(out.multipart.etag, /^[0-9a-f]{32}-2$/);
  assert.equal(out.multipart.size, 5 * 1024 * 1024 + 4);
  assert.equal(out.multipart.tail, "tail");
  assert.match(out.afterAbort, /10024/);
});
