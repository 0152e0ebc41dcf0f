import assert from "node:assert/strict";
import { test } from "node:test";
import { request } from "undici";
import { startTestPlatform } from "../testing/platform.js";
import { assertPromtoolAccepts, freeMetricsPort, sample, scrape } from "../testing/metrics.js";

/**
 * KV, D1 and Queues operations made through the v4 API are counted in the areas' operation metrics with
 * `via="api"`, their body bytes as the binding's are (the binding's own are in workers/metrics.test.ts).
 */
test('KV, D1 and Queues operations through the v4 API in /metrics, with via="api", outcomes and body bytes', async (t) => {
  const port = await freeMetricsPort();
  const p = await startTestPlatform({ args: ["--metrics-port", String(port)] });
  t.after(() => p.dispose());
  const account = `/accounts/${p.accountId}`;
  /** Bytes each operation's requests sent and its answers carried, as the client counted them. */
  const sent = new Map<string, number>();
  const received = new Map<string, number>();
  const call = async (op: string, method: string, path: string, body?: string | Buffer, contentType = "application/json") => {
    const res = await request(`${p.apiUrl}${path}`, {
      method: method as "GET",
      headers: { ...p.headers(), ...(body !== undefined && { "content-type": contentType }) },
      body,
    });
    const text = await res.body.text();
    sent.set(op, (sent.get(op) ?? 0) + (body === undefined ? 0 : Buffer.byteLength(body)));
    received.set(op, (received.get(op) ?? 0) + Buffer.byteLength(text));
    return { status: res.statusCode, json: text.startsWith("{") ? JSON.parse(text) : undefined, text };
  };

  // KV: a value written and read back, listed, a missing key (an error), deleted; a bulk write.
  const ns = (await p.api("POST", `${account}/storage/kv/namespaces`, { title: "api-metrics" })).body.result.id;
  const values = `${account}/storage/kv/namespaces/${ns}/values`;
  const value = Buffer.alloc(1500, "v");
  assert.equal((await call("kv put", "PUT", `${values}/k`, value, "application/octet-stream")).status, 200);
  assert.equal((await call("kv get", "GET", `${values}/k`)).text, value.toString());
  assert.equal((await call("kv get", "GET", `${values}/missing`)).status, 404);
  assert.equal((await call("kv list", "GET", `${account}/storage/kv/namespaces/${ns}/keys`)).status, 200);
  assert.equal((await call("kv delete", "DELETE", `${values}/k`)).status, 200);
  const bulk = JSON.stringify([
    { key: "a", value: "1" },
    { key: "b", value: "2" },
  ]);
  assert.equal((await call("kv bulk_put", "PUT", `${account}/storage/kv/namespaces/${ns}/bulk`, bulk)).status, 200);

  // D1: statements through /query and /raw.
  const db = (await p.api("POST", `${account}/d1/database`, { name: "api-metrics" })).body.result.uuid;
  const sql = JSON.stringify({ sql: "SELECT 1 AS one" });
  assert.equal((await call("d1 query", "POST", `${account}/d1/database/${db}/query`, sql)).status, 200);
  assert.equal((await call("d1 query", "POST", `${account}/d1/database/${db}/raw`, sql)).status, 200);

  // Queues: a message and a batch sent, the backlog read, pulled and acknowledged by an HTTP pull consumer.
  const queue = (await p.api("POST", `${account}/queues`, { queue_name: "api-metrics" })).body.result.queue_id;
  const q = `${account}/queues/${queue}`;
  assert.equal((await call("queues send", "POST", `${q}/messages`, JSON.stringify({ body: { n: 1 } }))).status, 200);
  const batch = JSON.stringify({ messages: [{ body: "two" }, { body: "three" }] });
  assert.equal((await call("queues send_batch", "POST", `${q}/messages/batch`, batch)).status, 200);
  assert.equal((await p.api("POST", `${q}/consumers`, { type: "http_pull" })).status, 200);
  assert.equal((await call("queues metrics", "GET", `${q}/metrics`)).status, 200);
  const pulled = await call("queues pull", "POST", `${q}/messages/pull`, JSON.stringify({ batch_size: 10 }));
  assert.equal(pulled.json.result.messages.length, 3, pulled.text);
  const acks = JSON.stringify({ acks: pulled.json.result.messages.map((m: { lease_id: string }) => ({ lease_id: m.lease_id })) });
  assert.equal((await call("queues ack", "POST", `${q}/messages/ack`, acks)).status, 200);

  const text = await scrape(`http://127.0.0.1:${port}/metrics`);
  const ops = (area: string, op: string, outcome = "ok") => sample(text, `edgeplatform_${area}_operations_total`, `op="${op}",via="api",outcome="${outcome}"`);
  const bytes = (area: string, op: string, direction: "in" | "out") => sample(text, `edgeplatform_${area}_bytes_total`, `op="${op}",direction="${direction}"`);
  assert.equal(ops("kv", "put"), 1);
  assert.equal(ops("kv", "get"), 1);
  assert.equal(ops("kv", "get", "error"), 1, "the missing key's 404");
  assert.equal(ops("kv", "list"), 1);
  assert.equal(ops("kv", "delete"), 1);
  assert.equal(ops("kv", "bulk_put"), 1);
  assert.equal(bytes("kv", "put", "in"), value.length, "the value as written");
  assert.equal(bytes("kv", "get", "out"), received.get("kv get"), "the value and the 404's envelope");
  assert.equal(bytes("kv", "bulk_put", "in"), sent.get("kv bulk_put"));
  assert.equal(ops("d1", "query"), 2);
  assert.equal(bytes("d1", "query", "in"), sent.get("d1 query"));
  assert.equal(bytes("d1", "query", "out"), received.get("d1 query"));
  for (const op of ["send", "send_batch", "metrics", "pull", "ack"]) {
    assert.equal(ops("queues", op), 1, op);
    assert.equal(bytes("queues", op, "out"), received.get(`queues ${op}`), op);
  }
  assert.equal(bytes("queues", "send_batch", "in"), sent.get("queues send_batch"));
  // Binding operations are apart: none were made.
  assert.equal(sample(text, "edgeplatform_kv_operations_total", 'op="put",via="binding",outcome="ok"'), undefined);

  await assertPromtoolAccepts(t, text);
});
