import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import Cloudflare from "cloudflare";
import { startTestPlatform, type TestPlatform } from "../core/testing/platform.js";

/** The v4 R2 API on the real platform: buckets, raw streamed objects, errors and permissions. */
let p: TestPlatform;
before(async () => {
  p = await startTestPlatform();
});
after(async () => {
  await p?.dispose();
});

const buckets = () => `/accounts/${p.accountId}/r2/buckets`;
const objectUrl = (bucket: string, key: string) => `${p.apiUrl}${buckets()}/${bucket}/objects/${key.split("/").map(encodeURIComponent).join("/")}`;

test("bucket create (text/plain JSON, as wrangler sends it), get, list, duplicate, invalid name", async () => {
  const res = await fetch(p.apiUrl + buckets(), {
    method: "POST",
    headers: p.headers({ "content-type": "text/plain;charset=UTF-8" }),
    body: JSON.stringify({ name: "api-bkt" }),
  });
  const body = (await res.json()) as any;
  assert.equal(res.status, 200, JSON.stringify(body));
  assert.equal(body.result.name, "api-bkt");
  assert.ok(Date.parse(body.result.creation_date));
  assert.equal(body.result.storage_class, "Standard");

  const dup = await p.api("POST", buckets(), { name: "api-bkt" });
  assert.equal(dup.status, 409);
  assert.equal(dup.body.errors[0].code, 10004);
  for (const name of ["x", "Bad_Name", "-dash"]) {
    const bad = await p.api("POST", buckets(), { name });
    assert.equal(bad.status, 400, name);
    assert.equal(bad.body.errors[0].code, 10005);
  }
  const missingName = await p.api("POST", buckets(), {});
  assert.equal(missingName.status, 400);

  const got = await p.api("GET", `${buckets()}/api-bkt`);
  assert.equal(got.body.result.name, "api-bkt");
  const none = await p.api("GET", `${buckets()}/no-such-bucket`);
  assert.equal(none.status, 404);
  assert.equal(none.body.errors[0].code, 10006);

  await p.api("POST", buckets(), { name: "api-other" });
  const list = await p.api("GET", buckets());
  assert.deepEqual(
    list.body.result.buckets.map((b: any) => b.name),
    ["api-bkt", "api-other"],
  );
  const paged = await p.api("GET", `${buckets()}?per_page=1`);
  assert.equal(paged.body.result.buckets.length, 1);
  const next = await p.api("GET", `${buckets()}?per_page=1&cursor=${paged.body.result_info.cursor}`);
  assert.deepEqual(
    next.body.result.buckets.map((b: any) => b.name),
    ["api-other"],
  );
  const contains = await p.api("GET", `${buckets()}?name_contains=other`);
  assert.deepEqual(
    contains.body.result.buckets.map((b: any) => b.name),
    ["api-other"],
  );
});

test("objects: raw put with metadata headers, get with headers and ranges, delete; bucket not empty", async () => {
  await p.api("POST", buckets(), { name: "obj-bkt" });
  const data = Buffer.from("some object bytes");
  const put = await fetch(objectUrl("obj-bkt", "dir/a b ü.txt"), {
    method: "PUT",
    headers: p.headers({
      "content-type": "text/plain",
      "cache-control": "max-age=30",
      "content-disposition": "inline",
      expires: "Wed, 01 Jan 2031 00:00:00 GMT",
    }),
    body: data,
  });
  const putBody = (await put.json()) as any;
  assert.equal(put.status, 200, JSON.stringify(putBody));
  assert.equal(putBody.result.key, "dir/a b ü.txt");
  assert.equal(putBody.result.etag, createHash("md5").update(data).digest("hex"));
  assert.equal(putBody.result.size, data.length);

  const get = await fetch(objectUrl("obj-bkt", "dir/a b ü.txt"), { headers: p.headers() });
  assert.equal(get.status, 200);
  assert.equal(get.headers.get("content-type"), "text/plain");
  assert.equal(get.headers.get("cache-control"), "max-age=30");
  assert.equal(get.headers.get("content-disposition"), "inline");
  assert.equal(get.headers.get("expires"), "Wed, 01 Jan 2031 00:00:00 GMT");
  assert.equal(get.headers.get("etag"), `"${putBody.result.etag}"`);
  assert.ok(Buffer.from(await get.arrayBuffer()).equals(data));

  const head = await fetch(objectUrl("obj-bkt", "dir/a b ü.txt"), { method: "HEAD", headers: p.headers() });
  assert.equal(head.status, 200);
  assert.equal(head.headers.get("content-length"), String(data.length));
  assert.equal(head.headers.get("etag"), `"${putBody.result.etag}"`);
  assert.equal((await head.arrayBuffer()).byteLength, 0);

  const ranged = await fetch(objectUrl("obj-bkt", "dir/a b ü.txt"), { headers: p.headers({ range: "bytes=5-10" }) });
  assert.equal(ranged.status, 206);
  assert.equal(ranged.headers.get("content-range"), `bytes 5-10/${data.length}`);
  assert.equal(await ranged.text(), "object");
  const badRange = await fetch(objectUrl("obj-bkt", "dir/a b ü.txt"), { headers: p.headers({ range: "bytes=500-" }) });
  assert.equal(badRange.status, 416);
  assert.equal(((await badRange.json()) as any).errors[0].code, 10039);
  const notModified = await fetch(objectUrl("obj-bkt", "dir/a b ü.txt"), { headers: p.headers({ "if-none-match": `"${putBody.result.etag}"` }) });
  assert.equal(notModified.status, 304);
  const conflict = await fetch(objectUrl("obj-bkt", "dir/a b ü.txt"), { method: "PUT", headers: p.headers({ "if-match": '"not-it"' }), body: "x" });
  assert.equal(conflict.status, 412);
  assert.equal(((await conflict.json()) as any).errors[0].code, 10031);

  const notEmpty = await p.api("DELETE", `${buckets()}/obj-bkt`);
  assert.equal(notEmpty.status, 409);
  assert.equal(notEmpty.body.errors[0].code, 10008);
  assert.match(notEmpty.body.errors[0].message, /not empty/);

  const del = await fetch(objectUrl("obj-bkt", "dir/a b ü.txt"), { method: "DELETE", headers: p.headers() });
  assert.equal(del.status, 200);
  const gone = await fetch(objectUrl("obj-bkt", "dir/a b ü.txt"), { headers: p.headers() });
  assert.equal(gone.status, 404);
  assert.equal(((await gone.json()) as any).errors[0].code, 10007);
  const noBucket = await fetch(objectUrl("nope-bucket", "k"), { method: "PUT", headers: p.headers(), body: "x" });
  assert.equal(noBucket.status, 404);
  assert.equal(((await noBucket.json()) as any).errors[0].code, 10006);
  const longKey = await fetch(objectUrl("obj-bkt", "k".repeat(1025)), { method: "PUT", headers: p.headers(), body: "x" });
  assert.equal(longKey.status, 400);
  assert.equal(((await longKey.json()) as any).errors[0].code, 10020);

  const emptied = await p.api("DELETE", `${buckets()}/obj-bkt`);
  assert.equal(emptied.status, 200);
  assert.equal((await p.api("GET", `${buckets()}/obj-bkt`)).status, 404);
});

test("object listing (prefix, delimiter, per_page, cursor) and an empty object", async () => {
  await p.api("POST", buckets(), { name: "list-bkt" });
  for (const k of ["a/1", "a/2", "b", "c/d/e"]) {
    const r = await fetch(objectUrl("list-bkt", k), { method: "PUT", headers: p.headers({ "content-type": "text/x" }), body: k });
    assert.equal(r.status, 200);
  }
  const empty = await fetch(objectUrl("list-bkt", "empty"), { method: "PUT", headers: p.headers(), body: "" });
  assert.equal(empty.status, 200, await empty.text());
  const back = await fetch(objectUrl("list-bkt", "empty"), { headers: p.headers() });
  assert.equal(back.status, 200);
  assert.equal((await back.arrayBuffer()).byteLength, 0);

  const all = await p.api("GET", `${buckets()}/list-bkt/objects`);
  assert.deepEqual(
    all.body.result.map((o: any) => o.key),
    ["a/1", "a/2", "b", "c/d/e", "empty"],
  );
  assert.equal(all.body.result[0].http_metadata.contentType, "text/x");
  const folders = await p.api("GET", `${buckets()}/list-bkt/objects?delimiter=/`);
  assert.deepEqual(
    folders.body.result.map((o: any) => o.key),
    ["b", "empty"],
  );
  assert.deepEqual(folders.body.result_info.delimited, ["a/", "c/"]);
  const page = await p.api("GET", `${buckets()}/list-bkt/objects?prefix=a/&per_page=1`);
  assert.deepEqual(
    page.body.result.map((o: any) => o.key),
    ["a/1"],
  );
  assert.equal(page.body.result_info.is_truncated, true);
  const next = await p.api("GET", `${buckets()}/list-bkt/objects?prefix=a/&per_page=1&cursor=${page.body.result_info.cursor}`);
  assert.deepEqual(
    next.body.result.map((o: any) => o.key),
    ["a/2"],
  );
  const bad = await p.api("GET", `${buckets()}/list-bkt/objects?per_page=0`);
  assert.equal(bad.status, 400);
  assert.equal(bad.body.errors[0].code, 10022);
  const none = await p.api("GET", `${buckets()}/no-bkt-here/objects`);
  assert.equal(none.status, 404);
  assert.equal(none.body.errors[0].code, 10006);
});

test("permissions: r2_read may read but not write; other permissions may not read", async () => {
  await p.api("POST", buckets(), { name: "perm-bkt" });
  await fetch(objectUrl("perm-bkt", "k"), { method: "PUT", headers: p.headers(), body: "v" });
  const mint = async (permissions: string[]) => {
    const r = await p.api("POST", "/user/tokens", { name: permissions.join(","), permissions, account_id: p.accountId });
    return { authorization: `Bearer ${r.body.result.value}` };
  };
  const reader = await mint(["r2_read"]);
  const stranger = await mint(["dns_read"]);
  assert.equal((await p.api("GET", buckets(), undefined, reader)).status, 200);
  assert.equal((await fetch(objectUrl("perm-bkt", "k"), { headers: reader })).status, 200);
  const write = await p.api("POST", buckets(), { name: "nope-nope" }, reader);
  assert.equal(write.status, 403);
  assert.equal(write.body.errors[0].code, 10000);
  assert.equal((await fetch(objectUrl("perm-bkt", "k"), { method: "PUT", headers: reader, body: "w" })).status, 403);
  assert.equal((await fetch(objectUrl("perm-bkt", "k"), { method: "DELETE", headers: reader })).status, 403);
  assert.equal((await p.api("GET", buckets(), undefined, stranger)).status, 403);
  assert.equal((await fetch(objectUrl("perm-bkt", "k"), { headers: stranger })).status, 403);
  // An account that is not the caller's looks the same as one that does not exist.
  assert.equal((await p.api("GET", `/accounts/0123456789abcdef0123456789abcdef/r2/buckets`)).status, 403);
});

test("the official cloudflare SDK (r2.buckets create, list, get, delete) works against the platform", async () => {
  const cf = new Cloudflare({ apiToken: p.token, baseURL: p.apiUrl, maxRetries: 0 });
  const created = await cf.r2.buckets.create({ account_id: p.accountId, name: "sdk-bucket", storageClass: "InfrequentAccess" });
  assert.equal(created.name, "sdk-bucket");
  assert.equal(created.storage_class, "InfrequentAccess");
  const listed = await cf.r2.buckets.list({ account_id: p.accountId });
  assert.ok(listed.buckets?.some((b) => b.name === "sdk-bucket"));
  const got = await cf.r2.buckets.get("sdk-bucket", { account_id: p.accountId });
  assert.equal(got.name, "sdk-bucket");
  await cf.r2.buckets.delete("sdk-bucket", { account_id: p.accountId });
  await assert.rejects(cf.r2.buckets.get("sdk-bucket", { account_id: p.accountId }), (e: any) => e.status === 404);

  // A jurisdiction promises data residency this platform cannot make: refused, nothing created; "default" is what it is.
  await assert.rejects(
    cf.r2.buckets.create({ account_id: p.accountId, name: "eu-bucket", "cf-r2-jurisdiction": "eu" }),
    (e: any) => e.status === 400 && /cf-r2-jurisdiction: jurisdiction \\?"eu\\?" is not supported here/.test(String(e)),
  );
  await assert.rejects(cf.r2.buckets.get("eu-bucket", { account_id: p.accountId }), (e: any) => e.status === 404);
  const plain = await cf.r2.buckets.create({ account_id: p.accountId, name: "default-bucket", "cf-r2-jurisdiction": "default" });
  assert.equal(plain.name, "default-bucket");
  await cf.r2.buckets.delete("default-bucket", { account_id: p.accountId });
});
