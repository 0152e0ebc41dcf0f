import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startBoundWorkerd, type BoundWorkerd } from "../workers/testing/bound-workerd.js";
import { createKvBindingHandler } from "./binding.js";
import { openLocalKvStore } from "./cli/local-backend.js";
import type { SqliteKvStore } from "./sqlite-store.js";

// A real workerd with a kvNamespace binding pointed at createKvBindingHandler on loopback: the script's
// env.KV calls are workerd's own requests, not ones shaped by this test.
const ACCOUNT = "c".repeat(32);
let dir: string;
let store: SqliteKvStore;
let close: () => void;
let workerd: BoundWorkerd;
let ns: string;

const SCRIPT = `
export default {
  async fetch(req, env) {
    const u = new URL(req.url);
    const key = u.searchParams.get("key");
    try {
      switch (u.pathname) {
        case "/put": {
          const ttl = u.searchParams.get("ttl");
          await env.KV.put(key, await req.arrayBuffer(), { expirationTtl: ttl ? Number(ttl) : undefined, metadata: { by: "script", note: "ü" } });
          return new Response("ok");
        }
        case "/get": {
          const { value, metadata } = await env.KV.getWithMetadata(key, "arrayBuffer");
          if (value === null) return new Response("null", { status: 404 });
          return new Response(value, { headers: { "x-metadata": encodeURIComponent(JSON.stringify(metadata)) } });
        }
        case "/json": return Response.json(await env.KV.get(key, "json"));
        case "/many": return Response.json(Object.fromEntries(await env.KV.get(u.searchParams.getAll("k"))));
        case "/list": {
          const out = [];
          let cursor;
          do {
            const page = await env.KV.list({ prefix: u.searchParams.get("prefix") ?? undefined, limit: 2, cursor });
            out.push(...page.keys);
            cursor = page.list_complete ? undefined : page.cursor;
          } while (cursor);
          return Response.json(out);
        }
        case "/delete": await env.KV.delete(key); return new Response("deleted");
      }
      return new Response("no route", { status: 404 });
    } catch (e) {
      return new Response(String(e.message), { status: 500 });
    }
  },
};
`;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), "kv-workerd-"));
  ({ store, close } = openLocalKvStore(join(dir, "state")));
  ns = (await store.createNamespace(ACCOUNT, "workerd")).id;
  const handler = createKvBindingHandler(store);
  workerd = await startBoundWorkerd({
    script: SCRIPT,
    binding: { name: "KV", kind: "kvNamespace" },
    compatibilityDate: "2024-09-01",
    handler: (req, res) => handler({ accountId: ACCOUNT, namespaceId: ns }, req, res),
  });
});

after(async () => {
  await workerd?.stop();
  close?.();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const call = (path: string, body?: Buffer | string) => workerd.fetch(path, { method: body === undefined ? "GET" : "POST", body });

test("a script's put / getWithMetadata / delete round-trip binary values and unicode keys through the store", async () => {
  const bytes = Buffer.from([0, 1, 2, 253, 254, 255]);
  const key = encodeURIComponent("pfx/ключ 🔑 ?&=");
  assert.equal((await call(`/put?key=${key}&ttl=300`, bytes)).status, 200);
  const got = await call(`/get?key=${key}`);
  assert.equal(got.status, 200);
  assert.deepEqual(Buffer.from(await got.arrayBuffer()), bytes);
  assert.deepEqual(JSON.parse(decodeURIComponent(got.headers.get("x-metadata")!)), { by: "script", note: "ü" });
  const entry = await store.get(ns, "pfx/ключ 🔑 ?&=");
  assert.deepEqual(entry?.value, bytes);
  assert.ok(entry!.expiration! > Date.now() / 1000 + 290);
  assert.equal(await (await call(`/delete?key=${key}`)).text(), "deleted");
  assert.equal((await call(`/get?key=${key}`)).status, 404);
});

test("get of many keys (bulk get) and json type, list across pages with a prefix", async () => {
  await store.putMany(
    ns,
    ["l/a", "l/b", "l/c", "m/x"].map((k) => ({ key: k, value: Buffer.from(JSON.stringify({ k })) })),
  );
  assert.deepEqual(await (await call("/json?key=l/b")).json(), { k: "l/b" });
  assert.deepEqual(await (await call("/many?k=l/a&k=l/c&k=nope")).json(), { "l/a": '{"k":"l/a"}', "l/c": '{"k":"l/c"}', nope: null });
  const listed = (await (await call("/list?prefix=l/")).json()) as { name: string }[];
  assert.deepEqual(
    listed.map((k) => k.name),
    ["l/a", "l/b", "l/c"],
  );
});

test("limits broken by a script throw in the script with our message", async () => {
  const ttl = await call("/put?key=short&ttl=10", "v");
  assert.equal(ttl.status, 500);
  assert.match(await ttl.text(), /KV PUT failed: 400 .*expiration_ttl of 10 is below the minimum of 60/);
  const long = await call(`/put?key=${"k".repeat(513)}`, "v");
  assert.match(await long.text(), /414|too long|512/);
  assert.equal(await store.get(ns, "short"), null);
});
