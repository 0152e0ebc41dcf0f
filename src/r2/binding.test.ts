import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FileContentStore } from "../core/content/file-store.js";
import { openDatabase, type Db } from "../core/db/sqlite.js";
import { EdgeError } from "../core/errors.js";
import { toBindingReply } from "../core/errors/render.js";
import { createR2BindingHandler, R2_BINDING_ERRORS } from "./binding.js";
import { r2Migrations } from "./sqlite-migrations.js";
import { SqliteR2Store } from "./sqlite-store.js";

/**
 * The binding backend over real HTTP, with requests shaped exactly as workerd sends them: the bucket comes from
 * an injected `x-bucket` header, as the Workers runtime's loopback server will do.
 */
let dir: string;
let db: Db;
let server: Server;
let port: number;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), "r2-binding-"));
  db = openDatabase(join(dir, "r2.sqlite"), r2Migrations);
  const store = new SqliteR2Store(db, new FileContentStore(join(dir, "content")));
  await store.createBucket("acc", "bkt");
  const handler = createR2BindingHandler(store);
  server = createServer((req, res) => handler({ accountId: "acc", bucketName: String(req.headers["x-bucket"]) }, req, res));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  port = (server.address() as AddressInfo).port;
});
after(async () => {
  await new Promise((r) => server.close(r));
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  /** The JSON before the payload (cf-r2-metadata-size) or the whole JSON body. */
  meta: any;
  payload: Buffer;
  error?: { version: number; v4code: number; message: string };
}

function send(method: "GET" | "PUT", headers: Record<string, string | number>, body?: Buffer): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, method, path: "/", headers: { host: "fake-host", "x-bucket": "bkt", ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const all = Buffer.concat(chunks);
        const metaSize = res.headers["cf-r2-metadata-size"];
        const n = metaSize === undefined ? all.length : Number(metaSize);
        const text = all.subarray(0, n).toString("utf8");
        const errHeader = res.headers["cf-r2-error"];
        resolve({
          status: res.statusCode!,
          headers: res.headers,
          body: all,
          meta: text ? JSON.parse(text) : undefined,
          payload: all.subarray(n),
          error: typeof errHeader === "string" ? JSON.parse(errHeader) : undefined,
        });
      });
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** head/get/list: `GET /`, operation JSON in cf-r2-request as raw UTF-8 bytes (which Node's client writes from a latin1 string). */
const getOp = (op: object) => send("GET", { "cf-r2-request": Buffer.from(JSON.stringify({ version: 1, ...op }), "utf8").toString("latin1") });

/** Writes: `PUT /`, the JSON first (its byte length in cf-r2-metadata-size), then the payload. */
function putOp(op: object, payload: Buffer = Buffer.alloc(0)): Promise<Reply> {
  const json = Buffer.from(JSON.stringify({ version: 1, ...op }), "utf8");
  const body = Buffer.concat([json, payload]);
  return send("PUT", { "cf-r2-metadata-size": json.length, "content-length": body.length }, body);
}

const md5 = (b: Buffer | string) => createHash("md5").update(b).digest();

test("put then get, head; metadata, checksums and a non-ASCII key", async () => {
  const key = "dossier/naïve-ü.txt";
  const data = Buffer.from("hello binding");
  const put = await putOp(
    {
      method: "put",
      object: key,
      customFields: [{ k: "author", v: "zoë" }],
      httpFields: { contentType: "text/plain", cacheExpiry: "1700000000000" },
      md5: md5(data).toString("base64"),
    },
    data,
  );
  assert.equal(put.status, 200, put.body.toString());
  assert.equal(put.meta.name, key);
  assert.equal(put.meta.etag, md5(data).toString("hex"));
  assert.equal(put.meta.size, data.length);
  assert.deepEqual(put.meta.customFields, [{ k: "author", v: "zoë" }]);
  assert.deepEqual(put.meta.httpFields, { contentType: "text/plain", cacheExpiry: 1700000000000 });
  assert.equal(put.meta.checksums["0"], md5(data).toString("hex"));

  const got = await getOp({ method: "get", object: key });
  assert.equal(got.status, 200);
  assert.equal(got.headers["content-encoding"], undefined);
  assert.equal(got.meta.name, key);
  assert.deepEqual(got.meta.range, { offset: 0, length: data.length });
  assert.ok(got.payload.equals(data));

  const head = await getOp({ method: "head", object: key });
  assert.equal(head.status, 200);
  assert.equal(head.meta.etag, put.meta.etag);
  assert.equal(head.payload.length, 0);
});

test("not found: 404 with cf-r2-error 10007 for get and head", async () => {
  for (const method of ["get", "head"]) {
    const r = await getOp({ method, object: "missing" });
    assert.equal(r.status, 404);
    assert.equal(r.error?.v4code, 10007);
    assert.equal(r.error?.version, 1);
  }
});

test("ranges: offset/length as strings, suffix, rangeHeader, 416", async () => {
  await putOp({ method: "put", object: "digits" }, Buffer.from("0123456789"));
  const a = await getOp({ method: "get", object: "digits", range: { offset: "2", length: "3" } });
  assert.equal(a.payload.toString(), "234");
  assert.deepEqual(a.meta.range, { offset: 2, length: 3 });
  const b = await getOp({ method: "get", object: "digits", range: { suffix: "3" } });
  assert.equal(b.payload.toString(), "789");
  const c = await getOp({ method: "get", object: "digits", rangeHeader: "bytes=0-4" });
  assert.equal(c.payload.toString(), "01234");
  const d = await getOp({ method: "get", object: "digits", range: { offset: "10" } });
  assert.equal(d.status, 416);
  assert.equal(d.error?.v4code, 10039);
});

test("conditional get: 412 + 10031 with the object's metadata; conditional put: 412", async () => {
  const put = await putOp({ method: "put", object: "cond" }, Buffer.from("v1"));
  const etag = put.meta.etag as string;
  const hit = await getOp({ method: "get", object: "cond", onlyIf: { etagMatches: [{ value: etag, type: "strong" }] } });
  assert.equal(hit.status, 200);
  assert.equal(hit.payload.toString(), "v1");
  const miss = await getOp({ method: "get", object: "cond", onlyIf: { etagDoesNotMatch: [{ value: etag, type: "strong" }] } });
  assert.equal(miss.status, 412);
  assert.equal(miss.error?.v4code, 10031);
  assert.equal(miss.meta.etag, etag, "the current object's JSON comes with the 412");
  assert.equal(miss.payload.length, 0);
  const after = await getOp({ method: "get", object: "cond", onlyIf: { uploadedAfter: String(put.meta.uploaded) } });
  assert.equal(after.status, 412);

  const refused = await putOp({ method: "put", object: "cond", onlyIf: { etagMatches: [{ value: "other", type: "strong" }] } }, Buffer.from("v2"));
  assert.equal(refused.status, 412);
  assert.equal(refused.error?.v4code, 10031);
  const still = await getOp({ method: "get", object: "cond" });
  assert.equal(still.payload.toString(), "v1");
});

test("bad checksum: 400 + 10037 and nothing stored", async () => {
  const r = await putOp({ method: "put", object: "bad-md5", md5: md5("other").toString("base64") }, Buffer.from("data"));
  assert.equal(r.status, 400);
  assert.equal(r.error?.v4code, 10037);
  assert.equal((await getOp({ method: "head", object: "bad-md5" })).status, 404);
  const sha = await putOp({ method: "put", object: "sha", sha256: createHash("sha256").update("data").digest("hex") }, Buffer.from("data"));
  assert.equal(sha.status, 200);
  assert.equal(sha.meta.checksums["2"], createHash("sha256").update("data").digest("hex"));
});

test("list: prefix, delimiter, include, limit and cursor", async () => {
  for (const k of ["l/a", "l/b", "l/sub/c", "l/sub/d", "l/z"]) {
    await putOp({ method: "put", object: k, httpFields: { contentType: "text/x" }, customFields: [{ k: "n", v: k }] }, Buffer.from(k));
  }
  const r = await getOp({ method: "list", prefix: "l/", delimiter: "/", include: [0, 1], newRuntime: true });
  assert.equal(r.status, 200);
  assert.deepEqual(
    r.meta.objects.map((o: any) => o.name),
    ["l/a", "l/b", "l/z"],
  );
  assert.deepEqual(r.meta.delimitedPrefixes, ["l/sub/"]);
  assert.equal(r.meta.truncated, false);
  assert.deepEqual(r.meta.objects[0].httpFields, { contentType: "text/x" });
  assert.deepEqual(r.meta.objects[0].customFields, [{ k: "n", v: "l/a" }]);

  const plain = await getOp({ method: "list", prefix: "l/" });
  assert.equal(plain.meta.objects[0].httpFields, undefined, "metadata only when included");
  assert.equal(plain.meta.objects[0].customFields, undefined);

  const p1 = await getOp({ method: "list", prefix: "l/", limit: 2 });
  assert.equal(p1.meta.truncated, true);
  assert.equal(p1.meta.objects.length, 2);
  const p2 = await getOp({ method: "list", prefix: "l/", limit: 10, cursor: p1.meta.cursor });
  assert.deepEqual(
    p2.meta.objects.map((o: any) => o.name),
    ["l/sub/c", "l/sub/d", "l/z"],
  );
  const sa = await getOp({ method: "list", prefix: "l/", startAfter: "l/sub/d" });
  assert.deepEqual(
    sa.meta.objects.map((o: any) => o.name),
    ["l/z"],
  );
  const bad = await getOp({ method: "list", limit: 5000 });
  assert.equal(bad.status, 400);
  assert.equal(bad.error?.v4code, 10022);
});

test("delete one and many", async () => {
  for (const k of ["d1", "d2", "d3"]) await putOp({ method: "put", object: k }, Buffer.from(k));
  const one = await putOp({ method: "delete", object: "d1" });
  assert.equal(one.status, 200);
  assert.equal(one.body.length, 0);
  const many = await putOp({ method: "delete", objects: ["d2", "d3"] });
  assert.equal(many.status, 200);
  for (const k of ["d1", "d2", "d3"]) assert.equal((await getOp({ method: "head", object: k })).status, 404);
});

test("multipart over the wire: create, uploadPart, complete; abort; etag of parts", async () => {
  const p1 = Buffer.alloc(5 * 1024 * 1024, 7);
  const p2 = Buffer.from("last part");
  const created = await putOp({ method: "createMultipartUpload", object: "mp", httpFields: { contentType: "application/x-mp" } });
  assert.equal(created.status, 200);
  const uploadId = created.meta.uploadId as string;
  assert.ok(uploadId);
  const u1 = await putOp({ method: "uploadPart", object: "mp", uploadId, partNumber: 1 }, p1);
  const u2 = await putOp({ method: "uploadPart", object: "mp", uploadId, partNumber: 2 }, p2);
  assert.equal(u1.meta.etag, md5(p1).toString("hex"));
  const done = await putOp({
    method: "completeMultipartUpload",
    object: "mp",
    uploadId,
    parts: [
      { etag: u1.meta.etag, part: 1 },
      { etag: u2.meta.etag, part: 2 },
    ],
  });
  assert.equal(done.status, 200, done.body.toString());
  assert.equal(
    done.meta.etag,
    createHash("md5")
      .update(Buffer.concat([md5(p1), md5(p2)]))
      .digest("hex") + "-2",
  );
  assert.equal(done.meta.size, p1.length + p2.length);
  const tail = await getOp({ method: "get", object: "mp", range: { suffix: "9" } });
  assert.equal(tail.payload.toString(), "last part");
  assert.deepEqual(tail.meta.httpFields, { contentType: "application/x-mp" });

  const again = await putOp({ method: "completeMultipartUpload", object: "mp", uploadId, parts: [{ etag: u1.meta.etag, part: 1 }] });
  assert.equal(again.status, 404);
  assert.equal(again.error?.v4code, 10024);
  const other = await putOp({ method: "createMultipartUpload", object: "mp2" });
  const aborted = await putOp({ method: "abortMultipartUpload", object: "mp2", uploadId: other.meta.uploadId });
  assert.equal(aborted.status, 200);
  const late = await putOp({ method: "uploadPart", object: "mp2", uploadId: other.meta.uploadId, partNumber: 1 }, Buffer.from("x"));
  assert.equal(late.error?.v4code, 10024);
});

test("bad requests get a cf-r2-error, never a 500", async () => {
  const cases: Promise<Reply>[] = [
    send("GET", {}),
    send("GET", { "cf-r2-request": "{not json" }),
    getOp({ method: "explode" }),
    getOp({ method: "get" }),
    send("PUT", { "cf-r2-metadata-size": 50, "content-length": 5 }, Buffer.from("short")),
    putOp({ method: "put", object: "k".repeat(1025) }, Buffer.from("x")),
    putOp({ method: "put", object: "m", customFields: [{ k: "big", v: "x".repeat(3000) }] }, Buffer.from("x")),
  ];
  const expected = [10029, 10029, 10029, 10029, 10029, 10020, 10012];
  const replies = await Promise.all(cases);
  replies.forEach((r, i) => {
    assert.ok(r.status >= 400 && r.status < 500, `case ${i}: status ${r.status}`);
    assert.equal(r.error?.v4code, expected[i], `case ${i}`);
  });
  // A bucket the backend does not have (the runtime only injects buckets that exist, but one may be deleted).
  const gone = await send("GET", { "x-bucket": "deleted-bucket", "cf-r2-request": JSON.stringify({ version: 1, method: "head", object: "k" }) });
  assert.equal(gone.status, 404);
  assert.equal(gone.error?.v4code, 10006);
});

test("R2_BINDING_ERRORS: cf-r2-error (ASCII-safe) and the same JSON as the body; a bug is the area's internal refusal", () => {
  const reply = toBindingReply(new EdgeError(404, 10007, "The specified key does not exist: é"), R2_BINDING_ERRORS);
  assert.equal(reply.status, 404);
  assert.equal(reply.headers["cf-r2-error"], '{"version":1,"v4code":10007,"message":"The specified key does not exist: \\u00e9"}');
  assert.equal(reply.headers["content-type"], "application/json");
  assert.deepEqual(JSON.parse(reply.body.toString()), { version: 1, v4code: 10007, message: "The specified key does not exist: é" });
  const bug = toBindingReply(new Error("boom"), R2_BINDING_ERRORS);
  assert.equal(bug.status, 500);
  assert.deepEqual(JSON.parse(bug.body.toString()), { version: 1, v4code: 10001, message: "We encountered an internal error. Please try again." });
});
