import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EdgeError } from "../core/errors.js";
import { toBindingReply } from "../core/errors/render.js";
import { createKvBindingHandler, KV_BINDING_ERRORS } from "./binding.js";
import { openLocalKvStore } from "./cli/local-backend.js";
import type { SqliteKvStore } from "./sqlite-store.js";

// The binding server as the workers service runs it: loopback HTTP, namespace chosen by an injected header.
let dir: string;
let store: SqliteKvStore;
let close: () => void;
let server: Server;
let port: number;
let ns: string;
const ACCOUNT = "b".repeat(32);

before(async () => {
  dir = mkdtempSync(join(tmpdir(), "kv-binding-"));
  ({ store, close } = openLocalKvStore(dir));
  ns = (await store.createNamespace(ACCOUNT, "binding")).id;
  const handler = createKvBindingHandler(store);
  server = createServer((req, res) => handler({ accountId: ACCOUNT, namespaceId: String(req.headers["x-ns"]) }, req, res));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  port = (server.address() as AddressInfo).port;
});
after(async () => {
  await new Promise((r) => server.close(r));
  close();
  rmSync(dir, { recursive: true, force: true });
});

interface Reply {
  status: number;
  reason: string;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** Sends a request the way workerd does: Host fake-host, raw UTF-8 header bytes, exact content-length. */
function send(method: string, path: string, opts: { body?: Buffer | string; headers?: Record<string, string>; namespace?: string } = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const body = opts.body === undefined ? undefined : Buffer.from(opts.body);
    const headers: Record<string, string | number> = { host: "fake-host", "x-ns": opts.namespace ?? ns, ...opts.headers };
    if (body) headers["content-length"] = body.length;
    const req = request({ host: "127.0.0.1", port, method, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode!, reason: res.statusMessage ?? "", headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

const keyPath = (key: string, query = "") => `/${encodeURIComponent(key)}?urlencoded=true${query}`;
/** Node sends header strings as latin1; this makes it put the UTF-8 bytes on the wire, as workerd does. */
const utf8Header = (s: string) => Buffer.from(s, "utf8").toString("latin1");
const now = () => Math.floor(Date.now() / 1000);

test("put then get returns the bytes, metadata and expiration headers; unicode keys and metadata survive", async () => {
  const value = Buffer.from([0, 159, 146, 150, 255]);
  const exp = now() + 3600;
  const put = await send("PUT", keyPath("dir/ключ 🔑?&", `&expiration=${exp}`), { body: value, headers: { "CF-KV-Metadata": utf8Header('{"who":"ünï"}') } });
  assert.equal(put.status, 200);
  const got = await send("GET", keyPath("dir/ключ 🔑?&", "&cache_ttl=60"));
  assert.equal(got.status, 200);
  assert.deepEqual(got.body, value);
  assert.equal(Buffer.from(String(got.headers["cf-kv-metadata"]), "latin1").toString("utf8"), '{"who":"ünï"}');
  assert.equal(got.headers["cf-expiration"], String(exp));
  // The same entry through the store's own API.
  assert.deepEqual((await store.get(ns, "dir/ключ 🔑?&"))?.metadata, { who: "ünï" });
});

test("a missing key is 404 (null in the script); delete is 200 and idempotent", async () => {
  assert.equal((await send("GET", keyPath("absent"))).status, 404);
  await send("PUT", keyPath("gone"), { body: "x" });
  assert.equal((await send("DELETE", keyPath("gone"))).status, 200);
  assert.equal((await send("DELETE", keyPath("gone"))).status, 200);
  assert.equal((await send("GET", keyPath("gone"))).status, 404);
});

test("expiration_ttl puts a TTL; limits answer with status and a reason the script sees", async () => {
  await send("PUT", keyPath("ttl", "&expiration_ttl=120"), { body: "v" });
  assert.ok(Number((await send("GET", keyPath("ttl"))).headers["cf-expiration"]) >= now() + 119);

  const shortTtl = await send("PUT", keyPath("ttl2", "&expiration_ttl=10"), { body: "v" });
  assert.equal(shortTtl.status, 400);
  assert.match(shortTtl.reason, /expiration_ttl of 10 is below the minimum of 60/);
  const longKey = await send("PUT", keyPath("k".repeat(513)), { body: "v" });
  assert.equal(longKey.status, 414);
  const bigMeta = await send("PUT", keyPath("m"), { body: "v", headers: { "CF-KV-Metadata": JSON.stringify({ s: "x".repeat(1100) }) } });
  assert.equal(bigMeta.status, 413);
  const badMeta = await send("PUT", keyPath("m"), { body: "v", headers: { "CF-KV-Metadata": "{not json" } });
  assert.equal(badMeta.status, 400);
  const dot = await send("PUT", keyPath(".."), { body: "v" });
  assert.equal(dot.status, 400);
  const big = await send("PUT", keyPath("big"), { body: Buffer.alloc(25 * 1024 * 1024 + 1) });
  assert.equal(big.status, 413);
  for (const k of ["ttl2", "m", "big"]) assert.equal((await send("GET", keyPath(k))).status, 404);
});

test("list: prefix, key_count_limit, cursor, metadata and expiration; cacheStatus null", async () => {
  for (const k of ["l/c", "l/a", "l/b", "m/x"]) await send("PUT", keyPath(k), { body: k, headers: k === "l/b" ? { "CF-KV-Metadata": '{"n":2}' } : {} });
  const first = JSON.parse((await send("GET", "/?key_count_limit=2&prefix=l%2F")).body.toString());
  assert.deepEqual(first.keys, [{ name: "l/a" }, { name: "l/b", metadata: { n: 2 } }]);
  assert.equal(first.list_complete, false);
  assert.equal(first.cacheStatus, null);
  const second = JSON.parse((await send("GET", `/?key_count_limit=2&prefix=l%2F&cursor=${encodeURIComponent(first.cursor)}`)).body.toString());
  assert.deepEqual(second.keys, [{ name: "l/c" }]);
  assert.equal(second.list_complete, true);
  assert.equal(second.cursor, undefined);
  assert.equal((await send("GET", "/?key_count_limit=1001")).status, 400);
});

test("bulk get: text, json and withMetadata; missing keys are null; at most 100 keys", async () => {
  await send("PUT", keyPath("j1"), { body: '{"a":1}', headers: { "CF-KV-Metadata": '{"m":true}' } });
  await send("PUT", keyPath("j2"), { body: "[2]" });
  const text = JSON.parse((await send("POST", "/bulk/get", { body: JSON.stringify({ keys: ["j1", "nope"] }) })).body.toString());
  assert.deepEqual(text, { j1: '{"a":1}', nope: null });
  const json = JSON.parse(
    (await send("POST", "/bulk/get", { body: JSON.stringify({ keys: ["j1", "j2"], type: "json", withMetadata: true }) })).body.toString(),
  );
  assert.deepEqual(json, { j1: { value: { a: 1 }, metadata: { m: true } }, j2: { value: [2], metadata: null } });
  const tooMany = await send("POST", "/bulk/get", { body: JSON.stringify({ keys: Array.from({ length: 101 }, (_, i) => `k${i}`) }) });
  assert.equal(tooMany.status, 400);
  // A key literally named "bulk/get" is still an ordinary key: workerd encodes the slash.
  await send("PUT", keyPath("bulk/get"), { body: "plain" });
  assert.equal((await send("GET", keyPath("bulk/get"))).body.toString(), "plain");
});

test("a namespace of another account (or none) is 404 for every operation", async () => {
  const foreign = (await store.createNamespace("someone-else", "theirs")).id;
  assert.equal((await send("GET", keyPath("x"), { namespace: foreign })).status, 404);
  assert.equal((await send("PUT", keyPath("x"), { namespace: foreign, body: "v" })).status, 404);
  assert.equal((await send("GET", "/", { namespace: "0".repeat(32) })).status, 404);
  assert.equal((await store.list(foreign)).keys.length, 0);
});

test("KV_BINDING_ERRORS: the status, the message as a printable reason phrase, {success, errors} as text", () => {
  const reply = toBindingReply(new EdgeError(413, 10029, "value is too large: “25 MiB”\nmax"), KV_BINDING_ERRORS);
  assert.equal(reply.status, 413);
  assert.equal(reply.reason, "value is too large: ?25 MiB??max");
  assert.deepEqual(reply.headers, { "content-type": "text/plain; charset=utf-8" });
  assert.deepEqual(JSON.parse(reply.body.toString()), { success: false, errors: [{ code: 10029, message: "value is too large: “25 MiB”\nmax" }] });
  const bug = toBindingReply(new Error("boom"), KV_BINDING_ERRORS);
  assert.deepEqual([bug.status, bug.reason, bug.body.toString()], [500, "Internal Server Error", "internal error"]);
});
