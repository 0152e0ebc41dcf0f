import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import Database from "better-sqlite3";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { startTestPlatform, type TestPlatform } from "../core/testing/platform.js";

let p: TestPlatform;
let base: string;
let ns: string;
before(async () => {
  // A short sweep interval, so the background purge can be watched.
  p = await startTestPlatform({ args: ["--kv-purge-interval", "0.2"] });
  base = `/accounts/${p.accountId}/storage/kv/namespaces`;
  ns = (await p.api("POST", base, { title: "api-main" })).body.result.id;
});
after(async () => {
  await p?.dispose();
});

const now = () => Math.floor(Date.now() / 1000);
/** A raw request (bodies that are not JSON, raw responses). */
const raw = (method: string, path: string, body?: RequestInit["body"], headers: Record<string, string> = {}) =>
  fetch(p.apiUrl + path, { method, body, headers: p.headers(headers) });
const value = (key: string) => `${base}/${ns}/values/${encodeURIComponent(key)}`;

test("namespaces: create, duplicate title 10014, get, rename, delete, 10013 after", async () => {
  const created = await p.api("POST", base, { title: "api-ns" });
  assert.equal(created.status, 200);
  assert.match(created.body.result.id, /^[0-9a-f]{32}$/);
  assert.equal(created.body.result.supports_url_encoding, true);
  const dup = await p.api("POST", base, { title: "api-ns" });
  assert.equal(dup.status, 400);
  assert.equal(dup.body.errors[0].code, 10014);
  const noTitle = await p.api("POST", base, {});
  assert.equal(noTitle.status, 400);
  const id = created.body.result.id;
  const renamed = await p.api("PUT", `${base}/${id}`, { title: "api-ns-2" });
  assert.equal(renamed.body.result.title, "api-ns-2");
  assert.equal((await p.api("GET", `${base}/${id}`)).body.result.title, "api-ns-2");
  assert.equal((await p.api("DELETE", `${base}/${id}`)).status, 200);
  const gone = await p.api("GET", `${base}/${id}`);
  assert.equal(gone.status, 404);
  assert.equal(gone.body.errors[0].code, 10013);
  const getValue = await p.api("GET", `${base}/${id}/values/x`);
  assert.equal(getValue.body.errors[0].code, 10013);
});

test("namespace list pages with per_page, order, direction, and [] past the end", async () => {
  for (const t of ["list-c", "list-a", "list-b"]) await p.api("POST", base, { title: t });
  const all = (await p.api("GET", `${base}?per_page=100&order=title&direction=asc`)).body;
  const titles = all.result.map((n: { title: string }) => n.title);
  assert.deepEqual(titles, [...titles].sort());
  const desc = (await p.api("GET", `${base}?per_page=2&page=1&order=title&direction=desc`)).body;
  assert.equal(desc.result.length, 2);
  assert.equal(desc.result[0].title, [...titles].sort().reverse()[0]);
  assert.equal(desc.result_info.total_count, titles.length);
  const past = (await p.api("GET", `${base}?per_page=2&page=99`)).body;
  assert.deepEqual(past.result, []);
  assert.equal((await p.api("GET", `${base}?order=size`)).status, 400);
});

test("values: raw bytes in and out, metadata endpoint, multipart with metadata, expiration_ttl", async () => {
  const bytes = Buffer.from([0, 1, 2, 250, 255, 10]);
  const put = await raw("PUT", value("bin/ä"), bytes, { "content-type": "application/octet-stream" });
  assert.equal(put.status, 200);
  const got = await raw("GET", value("bin/ä"));
  assert.equal(got.status, 200);
  assert.deepEqual(Buffer.from(await got.arrayBuffer()), bytes);

  // A JSON content type is still a raw value, not parsed.
  await raw("PUT", value("json"), '{"a":1}', { "content-type": "application/json" });
  assert.equal(await (await raw("GET", value("json"))).text(), '{"a":1}');

  const form = new FormData();
  form.set("value", new Blob([bytes]), "blob");
  form.set("metadata", JSON.stringify({ owner: "ü" }));
  const mp = await raw("PUT", `${value("mp")}?expiration_ttl=600`, form);
  assert.equal(mp.status, 200, await mp.clone().text());
  assert.deepEqual(Buffer.from(await (await raw("GET", value("mp"))).arrayBuffer()), bytes);
  const meta = await p.api("GET", `${base}/${ns}/metadata/mp`);
  assert.deepEqual(meta.body.result, { owner: "ü" });
  const keys = (await p.api("GET", `${base}/${ns}/keys?prefix=mp`)).body;
  assert.equal(keys.result[0].name, "mp");
  assert.ok(keys.result[0].expiration >= now() + 599);
  assert.deepEqual(keys.result[0].metadata, { owner: "ü" });

  const missing = await p.api("GET", `${base}/${ns}/values/nope`);
  assert.equal(missing.status, 404);
  assert.equal(missing.body.errors[0].code, 10009);
  assert.equal((await p.api("GET", `${base}/${ns}/metadata/nope`)).body.errors[0].code, 10009);

  assert.equal((await p.api("DELETE", value("mp"))).status, 200);
  assert.equal((await raw("GET", value("mp"))).status, 404);
});

test("value errors: 414 key, 413 value and metadata, 400 ttl and past expiration; nothing written", async () => {
  const long = await raw("PUT", value("k".repeat(513)), "x");
  assert.equal(long.status, 414);
  assert.equal(((await long.json()) as any).errors[0].code, 10033);

  const big = await raw("PUT", value("big"), Buffer.alloc(25 * 1024 * 1024 + 1), { "content-type": "application/octet-stream" });
  assert.equal(big.status, 413);
  assert.equal(((await big.json()) as any).errors[0].code, 10029);

  const form = new FormData();
  form.set("value", "x");
  form.set("metadata", JSON.stringify({ s: "y".repeat(1100) }));
  const meta = await raw("PUT", value("meta"), form);
  assert.equal(meta.status, 413);
  assert.equal(((await meta.json()) as any).errors[0].code, 10018);

  const ttl = await raw("PUT", `${value("ttl")}?expiration_ttl=30`, "x");
  assert.equal(ttl.status, 400);
  assert.match(((await ttl.json()) as any).errors[0].message, /minimum of 60/);
  const past = await raw("PUT", `${value("past")}?expiration=1000`, "x");
  assert.equal(past.status, 400);
  assert.match(((await past.json()) as any).errors[0].message, /in the past/);

  for (const k of ["big", "meta", "ttl", "past"]) assert.equal((await raw("GET", value(k))).status, 404);
});

test('keys: prefix listing across pages, cursor is "" when done, bad limit is 400', async () => {
  const entries = Array.from({ length: 25 }, (_, i) => ({ key: `page/${String(i).padStart(2, "0")}`, value: "v" }));
  await p.api("PUT", `${base}/${ns}/bulk`, [...entries, { key: "pagf", value: "outside" }]);
  const names: string[] = [];
  let cursor = "";
  let pages = 0;
  do {
    const r = (await p.api("GET", `${base}/${ns}/keys?prefix=page/&limit=10${cursor ? `&cursor=${cursor}` : ""}`)).body;
    names.push(...r.result.map((k: { name: string }) => k.name));
    assert.equal(r.result_info.count, r.result.length);
    cursor = r.result_info.cursor;
    pages++;
  } while (cursor);
  assert.equal(pages, 3);
  assert.deepEqual(
    names,
    entries.map((e) => e.key),
  );
  assert.equal((await p.api("GET", `${base}/${ns}/keys?limit=0`)).status, 400);
  assert.equal((await p.api("GET", `${base}/${ns}/keys?limit=1001`)).status, 400);
});

test("bulk write: base64, all or nothing with the entry index and rule named", async () => {
  const ok = await p.api("PUT", `${base}/${ns}/bulk`, [
    { key: "b64", value: Buffer.from([255, 0, 7]).toString("base64"), base64: true },
    { key: "plain", value: "hello", metadata: { m: 1 }, expiration_ttl: 300 },
  ]);
  assert.equal(ok.status, 200);
  assert.deepEqual(ok.body.result, { successful_key_count: 2, unsuccessful_keys: [] });
  assert.deepEqual(Buffer.from(await (await raw("GET", value("b64"))).arrayBuffer()), Buffer.from([255, 0, 7]));

  const bad = await p.api("PUT", `${base}/${ns}/bulk`, [
    { key: "atomic-1", value: "a" },
    { key: "atomic-2", value: "b", expiration_ttl: 10 },
    { key: "atomic-3", value: "c" },
  ]);
  assert.equal(bad.status, 400);
  assert.match(bad.body.errors[0].message, /^entry 1: expiration_ttl/);
  const typed = await p.api("PUT", `${base}/${ns}/bulk`, [
    { key: "atomic-1", value: "a" },
    { key: "atomic-x", value: 5 },
  ]);
  assert.match(typed.body.errors[0].message, /^entry 1: value must be a string/);
  const longKey = await p.api("PUT", `${base}/${ns}/bulk`, [
    { key: "atomic-1", value: "a" },
    { key: "k".repeat(600), value: "b" },
  ]);
  assert.equal(longKey.status, 414);
  assert.match(longKey.body.errors[0].message, /^entry 1: key is 600 bytes/);
  const tooMany = await p.api(
    "PUT",
    `${base}/${ns}/bulk`,
    Array.from({ length: 10_001 }, (_, i) => ({ key: `t${i}`, value: "" })),
  );
  assert.equal(tooMany.status, 413);
  assert.equal((await p.api("GET", `${base}/${ns}/keys?prefix=atomic`)).body.result.length, 0);
  assert.equal((await p.api("GET", `${base}/${ns}/keys?prefix=t`)).body.result.filter((k: { name: string }) => /^t\d/.test(k.name)).length, 0);
});

test("bulk delete (POST .../bulk/delete and DELETE .../bulk) and bulk get", async () => {
  await p.api(
    "PUT",
    `${base}/${ns}/bulk`,
    ["d1", "d2", "d3", "d4"].map((key) => ({ key, value: `v-${key}` })),
  );
  const got = await p.api("POST", `${base}/${ns}/bulk/get`, { keys: ["d1", "nope"] });
  assert.deepEqual(got.body.result.values, { d1: "v-d1", nope: null });
  const withMeta = await p.api("POST", `${base}/${ns}/bulk/get`, { keys: ["d2"], withMetadata: true });
  assert.deepEqual(withMeta.body.result.values.d2, { value: "v-d2", metadata: null });
  assert.equal((await p.api("POST", `${base}/${ns}/bulk/get`, { keys: Array.from({ length: 101 }, (_, i) => `k${i}`) })).status, 400);

  const viaPost = await p.api("POST", `${base}/${ns}/bulk/delete`, ["d1", "d2"]);
  assert.deepEqual(viaPost.body.result, { successful_key_count: 2, unsuccessful_keys: [] });
  const atomic = await p.api("DELETE", `${base}/${ns}/bulk`, ["d3", ""]);
  assert.equal(atomic.status, 400);
  assert.match(atomic.body.errors[0].message, /^entry 1: /);
  assert.equal((await raw("GET", value("d3"))).status, 200);
  assert.equal((await p.api("DELETE", `${base}/${ns}/bulk`, ["d3", "d4"])).status, 200);
  const left = (await p.api("GET", `${base}/${ns}/keys?prefix=d`)).body.result.map((k: { name: string }) => k.name);
  assert.deepEqual(left, []);
});

test("permissions: kv_read may read but not write; other accounts are refused", async () => {
  const created = await p.api("POST", "/user/tokens", { name: "kv-reader", permissions: ["kv_read"], account_id: p.accountId });
  assert.equal(created.status, 200, JSON.stringify(created.body));
  const reader = { authorization: `Bearer ${created.body.result.value}` };
  await raw("PUT", value("perm"), "x");
  const read = await fetch(p.apiUrl + value("perm"), { headers: reader });
  assert.equal(read.status, 200);
  const write = await fetch(p.apiUrl + value("perm"), { method: "PUT", body: "y", headers: reader });
  assert.equal(write.status, 403);
  assert.equal(((await write.json()) as any).errors[0].code, 10000);
  const create = await fetch(p.apiUrl + base, {
    method: "POST",
    body: JSON.stringify({ title: "nope" }),
    headers: { ...reader, "content-type": "application/json" },
  });
  assert.equal(create.status, 403);
  const other = await p.api("GET", `/accounts/${"f".repeat(32)}/storage/kv/namespaces`);
  assert.equal(other.status, 403);
});

test("expired entries are invisible at once and purged (with their content files) by the background sweep", async () => {
  await raw("PUT", `${value("exp/small")}?expiration_ttl=60`, "x");
  await raw("PUT", `${value("exp/big")}?expiration_ttl=60`, Buffer.alloc(200_000, 1), { "content-type": "application/octet-stream" });
  const contentDir = join(p.stateDir, "content", "kv");
  const files = () =>
    readdirSync(contentDir)
      .filter((d) => d !== "tmp")
      .flatMap((d) => readdirSync(join(contentDir, d)));
  const before = files().length;
  assert.ok(before >= 1);
  // Age the entries from outside, as another process sharing the file would (WAL allows it).
  const db = new Database(join(p.stateDir, "db", "kv.sqlite"));
  try {
    db.pragma("busy_timeout = 5000");
    db.prepare("UPDATE entries SET expiration = ? WHERE ns_id = ? AND key IN (?, ?)").run(now() - 1, ns, Buffer.from("exp/small"), Buffer.from("exp/big"));
    assert.equal((await raw("GET", value("exp/small"))).status, 404);
    const listed = (await p.api("GET", `${base}/${ns}/keys?prefix=exp/`)).body.result;
    assert.deepEqual(listed, []);
    const count = () =>
      (
        db.prepare("SELECT count(*) AS n FROM entries WHERE ns_id = ? AND key >= ? AND key < ?").get(ns, Buffer.from("exp/"), Buffer.from("exp0")) as {
          n: number;
        }
      ).n;
    // The sweep removes the rows first and their content files after: wait for both (a hang guard, not a timing).
    const purged = () => count() === 0 && files().length === before - 1;
    for (let i = 0; i < 300 && !purged(); i++) await new Promise((r) => setTimeout(r, 100));
    assert.equal(count(), 0, "the sweep should have removed the rows");
    assert.equal(files().length, before - 1, "and then the content file of the big value");
  } finally {
    db.close();
  }
});
