import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { startTestPlatform, type TestPlatform } from "../core/testing/platform.js";

/**
 * The requests Terraform's cloudflare provider v5 sends for cloudflare_workers_kv_namespace and cloudflare_workers_kv,
 * as its source builds them (internal/services/workers_kv_namespace, workers_kv): the namespace's model as JSON (a
 * rename is a PUT of it), a value as multipart with the `value` field and, when the config has it, `metadata` (plain
 * fields, no file names), the key escaped with Go's url.PathEscape. It reads the value's raw bytes and
 * `GET …/metadata/{key}` back on refresh. The provider itself is not run here.
 */
describe("Terraform provider v5: KV namespaces and values", () => {
  let p: TestPlatform;
  let otherAccount: string;
  let ns: string;
  const base = () => `/accounts/${p.accountId}/storage/kv/namespaces`;

  before(async () => {
    p = await startTestPlatform();
    const other = await p.api("POST", "/accounts", { name: "Other" }, p.keyHeaders());
    otherAccount = other.body.result.id;
  });
  after(() => p?.dispose());

  it("cloudflare_workers_kv_namespace: create, read, PUT rename, delete", async () => {
    const created = await p.api("POST", base(), { title: "tf-namespace" });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    ns = created.body.result.id;
    assert.match(ns, /^[0-9a-f]{32}$/);
    assert.equal(created.body.result.title, "tf-namespace");
    assert.equal(typeof created.body.result.supports_url_encoding, "boolean");

    const renamed = await p.api("PUT", `${base()}/${ns}`, { title: "tf-namespace-renamed" });
    assert.equal(renamed.status, 200, JSON.stringify(renamed.body));
    // the provider reads the computed fields of the update's answer: the namespace, not an empty result
    assert.equal(renamed.body.result.id, ns);
    assert.equal(renamed.body.result.title, "tf-namespace-renamed");
    assert.equal(renamed.body.result.supports_url_encoding, created.body.result.supports_url_encoding);
    const read = await p.api("GET", `${base()}/${ns}`);
    assert.deepEqual(read.body.result, renamed.body.result);

    // another account's path does not reach it
    assert.equal((await p.api("GET", `/accounts/${otherAccount}/storage/kv/namespaces/${ns}`, undefined, p.keyHeaders())).status, 404);

    const gone = await p.api("POST", base(), { title: "tf-gone" });
    assert.equal((await p.api("DELETE", `${base()}/${gone.body.result.id}`)).status, 200);
    assert.equal((await p.api("GET", `${base()}/${gone.body.result.id}`)).status, 404);
  });

  const putValue = async (key: string, value: string, metadata?: string) => {
    const form = new FormData();
    form.append("value", value);
    if (metadata !== undefined) form.append("metadata", metadata);
    const res = await fetch(`${p.apiUrl}${base()}/${ns}/values/${encodeURIComponent(key)}`, { method: "PUT", headers: p.headers(), body: form });
    return { status: res.status, body: (await res.json()) as any };
  };

  it("cloudflare_workers_kv: multipart PUT with metadata, raw value and …/metadata/{key} read back, delete", async () => {
    const key = "config/site name";
    const put = await putValue(key, '{"theme":"dark"}', '{"owner":"tf","version":2}');
    assert.equal(put.status, 200, JSON.stringify(put.body));
    assert.equal(put.body.success, true);

    const escaped = encodeURIComponent(key);
    const value = await fetch(`${p.apiUrl}${base()}/${ns}/values/${escaped}`, { headers: p.headers() });
    assert.equal(value.status, 200);
    assert.equal(await value.text(), '{"theme":"dark"}');
    const meta = await p.api("GET", `${base()}/${ns}/metadata/${escaped}`);
    assert.equal(meta.status, 200, JSON.stringify(meta.body));
    assert.deepEqual(meta.body.result, { owner: "tf", version: 2 });

    // the update is the same PUT; a config without metadata sends only `value`, and the metadata is gone
    assert.equal((await putValue(key, "plain")).status, 200);
    assert.equal(await (await fetch(`${p.apiUrl}${base()}/${ns}/values/${escaped}`, { headers: p.headers() })).text(), "plain");
    assert.equal((await p.api("GET", `${base()}/${ns}/metadata/${escaped}`)).body.result, null);

    // metadata that is not JSON: a clear 400, the value as it was
    const bad = await putValue(key, "other", "{not json");
    assert.equal(bad.status, 400, JSON.stringify(bad.body));
    assert.equal(await (await fetch(`${p.apiUrl}${base()}/${ns}/values/${escaped}`, { headers: p.headers() })).text(), "plain");

    assert.equal((await p.api("DELETE", `${base()}/${ns}/values/${escaped}`)).status, 200);
    const gone = await fetch(`${p.apiUrl}${base()}/${ns}/values/${escaped}`, { headers: p.headers() });
    assert.equal(gone.status, 404);
    assert.equal((await p.api("GET", `${base()}/${ns}/metadata/${escaped}`)).status, 404);
  });
});
