import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { callGateway, chatBody, createGateway } from "../../ai-gateway/testing/helpers.js";
import { startMockProvider, type MockProvider } from "../../ai-gateway/testing/mock-provider.js";
import { hit, uploadScript } from "../../workers/testing/helpers.js";
import { createAccount, PROTOTYPE_KEYS, sendForm } from "../testing/hostile.js";
import { startTestPlatform, type TestPlatform } from "../testing/platform.js";

// `__proto__`, `constructor` and `prototype` in every input family that carries names a client chose: each is
// refused with a 4xx v4 envelope or kept as plain data, and none changes what another request (or account) sees.
let p: TestPlatform;
let mock: MockProvider;
let other: string;
let zone: string;
let ns: string;
before(async () => {
  mock = await startMockProvider();
  p = await startTestPlatform({ args: ["--dns-port", "0", "--provider-base-url", `openai=${mock.url}`] });
  other = await createAccount(p, "Bystander");
  zone = (await p.api("POST", "/zones", { name: "keys.example", account: { id: p.accountId } })).body.result.id;
  ns = (await p.api("POST", `/accounts/${p.accountId}/storage/kv/namespaces`, { title: "keys" })).body.result.id;
});
after(async () => {
  await p?.dispose();
  await mock?.close();
});

const refused = (r: { status: number; body: any }, what: string) => {
  assert.ok(r.status >= 400 && r.status < 500, `${what}: ${r.status} ${JSON.stringify(r.body)}`);
  assert.equal(r.body.success, false, what);
  assert.equal(typeof r.body.errors[0].code, "number", what);
};
const kv = () => `/accounts/${p.accountId}/storage/kv/namespaces/${ns}`;

/** Nothing leaked into Object.prototype of the server: fresh objects in another account carry no stray fields. */
async function assertNothingLeaked(): Promise<void> {
  const otherZone = await p.api("POST", "/zones", { name: `bystander-${Date.now()}.example`, account: { id: other } }, p.keyHeaders());
  assert.equal(otherZone.status, 200, JSON.stringify(otherZone.body));
  const record = await p.api("POST", `/zones/${otherZone.body.result.id}/dns_records`, { type: "A", name: "www", content: "192.0.2.1" }, p.keyHeaders());
  assert.equal(record.status, 200, JSON.stringify(record.body));
  assert.equal(record.body.result.comment, null);
  assert.deepEqual(record.body.result.tags, []);
  const otherNs = (await p.api("POST", `/accounts/${other}/storage/kv/namespaces`, { title: `bystander-${Date.now()}` }, p.keyHeaders())).body.result.id;
  const bulk = await p.api("PUT", `/accounts/${other}/storage/kv/namespaces/${otherNs}/bulk`, [{ key: "k", value: "v" }], p.keyHeaders());
  assert.equal(bulk.status, 200, JSON.stringify(bulk.body));
  const keys = (await p.api("GET", `/accounts/${other}/storage/kv/namespaces/${otherNs}/keys`, undefined, p.keyHeaders())).body.result;
  assert.deepEqual(keys, [{ name: "k" }]);
}

describe("JSON bodies", () => {
  it("a __proto__ key anywhere in a JSON body is a 400, on every family's routes", async () => {
    const poison = (inner: Record<string, unknown>) => JSON.parse(`{"__proto__": {"comment": "x", "expiration_ttl": 60}, ${JSON.stringify(inner).slice(1)}`);
    const cases: [string, string, unknown][] = [
      ["POST", `/zones/${zone}/dns_records`, poison({ type: "A", name: "a", content: "192.0.2.1" })],
      [
        "POST",
        `/zones/${zone}/dns_records`,
        { type: "SRV", name: "_s._tcp", data: JSON.parse('{"__proto__":{"port":1},"priority":1,"weight":1,"port":1,"target":"t.example"}') },
      ],
      ["PATCH", `/zones/${zone}/dns_settings`, { soa: JSON.parse('{"__proto__":{"refresh":1}}') }],
      ["PUT", `${kv()}/bulk`, [poison({ key: "k", value: "v" })]],
      ["PUT", `${kv()}/bulk`, [{ key: "k", value: "v", metadata: JSON.parse('{"__proto__":{"x":1}}') }]],
      ["POST", `/accounts/${p.accountId}/r2/buckets`, poison({ name: "proto-bucket" })],
      ["POST", `/accounts/${p.accountId}/ai-gateway/gateways`, poison({ id: "proto-gw" })],
      ["POST", "/user/tokens", { name: "t", policies: [{ resources: JSON.parse('{"__proto__":"*"}'), permission_groups: [{ id: "dns_read" }] }] }],
      ["PUT", `/accounts/${p.accountId}/workers/scripts/s/secrets`, poison({ name: "S", text: "v" })],
      ["POST", `/zones/${zone}/dns_records`, JSON.parse('{"type":"A","name":"c","content":"192.0.2.1","constructor":{"prototype":{"comment":"x"}}}')],
    ];
    for (const [method, path, body] of cases) {
      // JSON.stringify writes an own __proto__ key like any other, so the server receives it as a client would send it.
      const r = await p.api(method, path, body);
      refused(r, `${method} ${path} ${JSON.stringify(body)}`);
    }
    assert.equal((await p.api("GET", `/zones/${zone}/dns_records`)).body.result.length, 0, "no record was created");
    await assertNothingLeaked();
  });

  it("constructor and prototype as plain field names are data or unknown fields, never reach other objects", async () => {
    const r = await p.api("POST", `/zones/${zone}/dns_records`, {
      type: "SRV",
      name: "_sip._udp",
      data: { constructor: "x", prototype: { port: 1 }, priority: 1, weight: 2, port: 5060, target: "sip.keys.example" },
      constructor: { comment: "x" },
      prototype: { comment: "x" },
      comment: "constructor",
      tags: PROTOTYPE_KEYS.map((k) => `${k}:v`),
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(r.body.result.data, { priority: 1, weight: 2, port: 5060, target: "sip.keys.example" });
    assert.equal(r.body.result.comment, "constructor");
    for (const k of PROTOTYPE_KEYS) {
      const found = await p.api("GET", `/zones/${zone}/dns_records?tag.present=${k}`);
      assert.equal(found.body.result.length, 1, `tag.present=${k}`);
    }
    const gw = await p.api("POST", `/accounts/${p.accountId}/ai-gateway/gateways`, {
      id: "plain-names",
      cache_ttl: 0,
      cache_invalidate_on_update: false,
      collect_logs: true,
      rate_limiting_interval: 0,
      rate_limiting_limit: 0,
      constructor: 1,
      prototype: 2,
    });
    assert.equal(gw.status, 200, JSON.stringify(gw.body));
    assert.equal(gw.body.result.constructor, Object, "no such field is stored");
    await assertNothingLeaked();
  });
});

describe("query strings", () => {
  it("order, filters and other keyed parameters naming the three keys are 400s or plain unknown values", async () => {
    for (const k of PROTOTYPE_KEYS) {
      refused(await p.api("GET", `/zones?order=${k}`), `zones order=${k}`);
      refused(await p.api("GET", `/zones/${zone}/dns_records?order=${k}`), `records order=${k}`);
      refused(await p.api("GET", `/accounts/${p.accountId}/ai-gateway/gateways/plain-names/logs?order_by=${k}`), `logs order_by=${k}`);
      const filters = encodeURIComponent(JSON.stringify([{ key: k, operator: "eq", value: ["x"] }]));
      refused(await p.api("GET", `/accounts/${p.accountId}/ai-gateway/gateways/plain-names/logs?filters=${filters}`), `logs filters key ${k}`);
      refused(
        await p.api("GET", `/accounts/${p.accountId}/ai-gateway/gateways/plain-names/logs?filters.key=${k}&filters.operator=eq&filters.value=x`),
        `logs dot filters key ${k}`,
      );
      // Unknown parameters named after them are ignored, as any unknown parameter is.
      const listed = await p.api("GET", `/zones/${zone}/dns_records?${k}=1&${k}.exact=2`);
      assert.equal(listed.status, 200, `${k} as a parameter name: ${JSON.stringify(listed.body)}`);
    }
    const nested = encodeURIComponent('[{"key":"model","operator":"eq","value":["x"],"__proto__":{"key":"id"}}]');
    refused(await p.api("GET", `/accounts/${p.accountId}/ai-gateway/gateways/plain-names/logs?filters=${nested}`), "filters with __proto__");
    // An SVCB parameter key is looked up the same way.
    for (const k of PROTOTYPE_KEYS) {
      const r = await p.api("POST", `/zones/${zone}/dns_records`, { type: "HTTPS", name: `svc-${k}`, data: { priority: 1, target: ".", value: `${k}=1` } });
      refused(r, `SvcParam ${k}`);
    }
  });
});

describe("KV", () => {
  it("keys named __proto__, constructor and prototype are keys like any other, in bulk get too", async () => {
    for (const k of PROTOTYPE_KEYS) {
      const put = await fetch(`${p.apiUrl}${kv()}/values/${k}`, { method: "PUT", headers: p.headers(), body: `value of ${k}` });
      assert.equal(put.status, 200, k);
    }
    const got = await p.api("POST", `${kv()}/bulk/get`, { keys: [...PROTOTYPE_KEYS] });
    assert.equal(got.status, 200, JSON.stringify(got.body));
    assert.deepEqual(JSON.parse(JSON.stringify(got.body.result.values)), Object.fromEntries(PROTOTYPE_KEYS.map((k) => [k, `value of ${k}`])));
    const withMeta = await p.api("POST", `${kv()}/bulk/get`, { keys: ["__proto__"], withMetadata: true });
    assert.equal(Object.keys(withMeta.body.result.values).length, 1, JSON.stringify(withMeta.body));
  });

  it("metadata: a __proto__ key is a 400 (multipart or bulk); constructor and prototype are stored and returned", async () => {
    const form = (metadata: string) => {
      const f = new FormData();
      f.set("value", "v");
      f.set("metadata", metadata);
      return f;
    };
    const bad = await sendForm(p, "PUT", `${kv()}/values/meta-bad`, form('{"__proto__":{"x":1}}'));
    refused(bad, "multipart metadata with __proto__");
    assert.equal(bad.body.errors[0].code, 10028);
    const meta = { constructor: { prototype: 1 }, prototype: "p", nested: { constructor: "c" } };
    const good = await sendForm(p, "PUT", `${kv()}/values/meta-good`, form(JSON.stringify({ constructor: "c", prototype: "p" })));
    assert.equal(good.status, 200, JSON.stringify(good.body));
    assert.deepEqual((await p.api("GET", `${kv()}/metadata/meta-good`)).body.result, { constructor: "c", prototype: "p" });
    refused(await p.api("PUT", `${kv()}/bulk`, [{ key: "m", value: "v", metadata: meta }]), "constructor.prototype in bulk metadata");
  });
});

describe("workers", () => {
  it("binding and secret names __proto__, constructor and prototype are refused", async () => {
    const code = "export default { fetch() { return new Response('x'); } };";
    assert.equal((await uploadScript(p, "named", code)).status, 200);
    for (const k of PROTOTYPE_KEYS) {
      const up = await uploadScript(p, "named", code, { bindings: [{ type: "plain_text", name: k, text: "x" }] });
      refused(up, `binding named ${k}`);
      assert.match(up.body.errors[0].message, /reserved/);
      const secret = await p.api("PUT", `/accounts/${p.accountId}/workers/scripts/named/secrets`, { name: k, text: "x" });
      refused(secret, `secret named ${k}`);
      assert.match(secret.body.errors[0].message, /reserved/);
    }
  });

  it("a script's R2 custom metadata and KV metadata keep __proto__, constructor and prototype as plain keys", async () => {
    assert.equal((await p.api("POST", `/accounts/${p.accountId}/r2/buckets`, { name: "proto-keys" })).status, 200);
    const code = `export default { async fetch(req, env) {
      const meta = Object.fromEntries(${JSON.stringify(PROTOTYPE_KEYS)}.map((k) => [k, "v-" + k]));
      await env.B.put("o", "body", { customMetadata: meta });
      await env.K.put("k", "v", { metadata: meta });
      const { metadata } = await env.K.getWithMetadata("k");
      return Response.json(Object.entries(metadata));
    } };`;
    const up = await uploadScript(p, "meta-keys", code, {
      bindings: [
        { type: "r2_bucket", name: "B", bucket_name: "proto-keys" },
        { type: "kv_namespace", name: "K", namespace_id: ns },
      ],
    });
    assert.equal(up.status, 200, JSON.stringify(up.body));
    const r = await hit(p, "meta-keys", "/");
    assert.equal(r.status, 200, r.text);
    const want = PROTOTYPE_KEYS.map((k) => [k, `v-${k}`]);
    assert.deepEqual(JSON.parse(r.text), want, "KV metadata as the script reads it back");
    // R2 as stored (workerd itself builds the object a script reads with plain assignments, so a script's
    // own view loses __proto__ there; what matters here is that the platform kept all three).
    const listed = await p.api("GET", `/accounts/${p.accountId}/r2/buckets/proto-keys/objects`);
    const stored = listed.body.result[0].custom_metadata;
    assert.deepEqual(
      PROTOTYPE_KEYS.map((k) => [k, Object.hasOwn(stored, k) ? stored[k] : undefined]),
      want,
      JSON.stringify(listed.body),
    );
    await assertNothingLeaked();
  });
});

describe("AI gateway", () => {
  const chat = (headers: Record<string, string>, body: unknown = chatBody()) =>
    callGateway(`${p.url}/v1/${p.accountId}/logged-keys/openai/chat/completions`, { headers: { authorization: "Bearer sk-x", ...headers }, body });

  it("request metadata with __proto__ is a 400; constructor and prototype are logged as data; model names are not looked up on objects", async () => {
    await createGateway(p, "logged-keys");
    const bad = await chat({ "gw-aig-metadata": '{"__proto__":{"x":1}}' });
    assert.equal(bad.status, 400, bad.text);
    const good = await chat({ "gw-aig-metadata": JSON.stringify({ constructor: "c", prototype: "p" }) });
    assert.equal(good.status, 200, good.text);
    const log = await p.api("GET", `/accounts/${p.accountId}/ai-gateway/gateways/logged-keys/logs/${good.headers["gw-aig-log-id"]}`);
    assert.deepEqual(log.body.result.metadata, { constructor: "c", prototype: "p" });
    for (const model of PROTOTYPE_KEYS) {
      const r = await chat({}, chatBody("hi", { model }));
      assert.equal(r.status, 200, r.text);
      const l = (await p.api("GET", `/accounts/${p.accountId}/ai-gateway/gateways/logged-keys/logs/${r.headers["gw-aig-log-id"]}`)).body.result;
      assert.equal(l.cost, null, `model ${model}`);
      assert.match(l.cost_note, /no price is known/, `model ${model}`);
    }
    await assertNothingLeaked();
  });
});
