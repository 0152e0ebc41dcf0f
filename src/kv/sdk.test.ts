import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import Cloudflare from "cloudflare";
import { startTestPlatform, type TestPlatform } from "../core/testing/platform.js";

// The official TypeScript SDK (a real client) against the KV routes.
let p: TestPlatform;
let cf: Cloudflare;
before(async () => {
  p = await startTestPlatform();
  cf = new Cloudflare({ apiToken: p.token, baseURL: p.apiUrl, maxRetries: 0 });
});
after(async () => {
  await p?.dispose();
});

test("cloudflare SDK: namespaces create, list (auto-paging), update, get, delete", async () => {
  const account_id = p.accountId;
  const made = [];
  for (const title of ["sdk-c", "sdk-a", "sdk-b"]) made.push(await cf.kv.namespaces.create({ account_id, title }));
  const titles: string[] = [];
  for await (const ns of cf.kv.namespaces.list({ account_id, per_page: 2, order: "title", direction: "asc" })) titles.push(ns.title);
  assert.deepEqual(titles, ["sdk-a", "sdk-b", "sdk-c"]);
  const renamed = await cf.kv.namespaces.update(made[0]!.id, { account_id, title: "sdk-z" });
  assert.equal(renamed.title, "sdk-z");
  assert.equal((await cf.kv.namespaces.get(made[0]!.id, { account_id })).title, "sdk-z");
  await cf.kv.namespaces.delete(made[0]!.id, { account_id });
  await assert.rejects(cf.kv.namespaces.get(made[0]!.id, { account_id }), (e: InstanceType<typeof Cloudflare.NotFoundError>) => e.status === 404);
  await assert.rejects(
    cf.kv.namespaces.create({ account_id, title: "sdk-a" }),
    (e: InstanceType<typeof Cloudflare.BadRequestError>) => e.status === 400 && /10014/.test(JSON.stringify(e.errors)),
  );
});

test("cloudflare SDK: values update (multipart) and get, metadata, keys list with cursor, bulk update/get/delete", async () => {
  const account_id = p.accountId;
  const namespace_id = (await cf.kv.namespaces.create({ account_id, title: "sdk-values" })).id;
  await cf.kv.namespaces.values.update("greeting", { account_id, namespace_id, value: "hello", metadata: JSON.stringify({ lang: "en" }), expiration_ttl: 600 });
  const res = await cf.kv.namespaces.values.get("greeting", { account_id, namespace_id });
  assert.equal(await res.text(), "hello");
  assert.deepEqual(await cf.kv.namespaces.metadata.get("greeting", { account_id, namespace_id }), { lang: "en" });

  await cf.kv.namespaces.bulkUpdate(namespace_id, {
    account_id,
    body: Array.from({ length: 15 }, (_, i) => ({ key: `k${String(i).padStart(2, "0")}`, value: Buffer.from(`v${i}`).toString("base64"), base64: true })),
  });
  const names: string[] = [];
  for await (const key of cf.kv.namespaces.keys.list(namespace_id, { account_id, prefix: "k", limit: 10 })) names.push(key.name);
  assert.equal(names.length, 15);
  assert.equal(names[0], "k00");

  const got = await cf.kv.namespaces.bulkGet(namespace_id, { account_id, keys: ["k01", "missing"] });
  assert.deepEqual((got as { values: Record<string, unknown> }).values, { k01: "v1", missing: null });

  const deleted = await cf.kv.namespaces.bulkDelete(namespace_id, { account_id, body: ["k00", "k01"] });
  assert.equal(deleted?.successful_key_count, 2);
  await cf.kv.namespaces.values.delete("greeting", { account_id, namespace_id });
  const left: string[] = [];
  for await (const key of cf.kv.namespaces.keys.list(namespace_id, { account_id })) left.push(key.name);
  assert.equal(left.length, 13);
  assert.ok(!left.includes("greeting"));
});
