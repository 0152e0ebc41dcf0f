import assert from "node:assert/strict";
import { test } from "node:test";
import { assertPromtoolAccepts, freeMetricsPort, sample, scrape } from "../core/testing/metrics.js";
import { Registry } from "prom-client";
import { MAX_SCRIPT_LABELS, OTHER_SCRIPTS, WorkersMetrics } from "./metrics.js";
import { hit, startPlatform, uploadScript } from "./testing/helpers.js";

// One Worker with a binding of each data area, on the platform's real workerd: its invocations, subrequests and CPU
// time are counted by Workers, the operations of its bindings by KV, R2, D1 and Queues, each in its own metrics.
const SCRIPT = `
export default {
  async fetch(req, env) {
    const u = new URL(req.url);
    switch (u.pathname) {
      case "/kv":
        await env.KV.put("k", "v".repeat(1000));
        return new Response(await env.KV.get("k"));
      case "/r2":
        await env.B.put("o", "x".repeat(2000));
        return new Response(await (await env.B.get("o")).text());
      case "/d1":
        return Response.json(await env.DB.prepare("SELECT 1 AS one").all());
      case "/queue":
        await env.Q.send({ n: 1 });
        await env.Q.sendBatch([{ body: 2 }, { body: 3 }]);
        return new Response("sent");
      case "/fetch":
        try { await fetch("http://127.0.0.1:1/"); } catch {}
        return new Response("fetched");
      case "/fail":
        throw new Error("boom");
    }
    return new Response("hello");
  },
};
`;

test("Workers' invocations, errors, wall and CPU time and subrequests, and the data areas' binding operations, in /metrics", async (t) => {
  const port = await freeMetricsPort();
  const p = await startPlatform(["--metrics-port", String(port)]);
  t.after(() => p.dispose());
  const ns = (await p.api("POST", `/accounts/${p.accountId}/storage/kv/namespaces`, { title: "metrics-kv" })).body.result.id;
  assert.equal((await p.api("POST", `/accounts/${p.accountId}/r2/buckets`, { name: "metrics-bucket" })).status, 200);
  const db = (await p.api("POST", `/accounts/${p.accountId}/d1/database`, { name: "metrics-db" })).body.result.uuid;
  assert.equal((await p.api("POST", `/accounts/${p.accountId}/queues`, { queue_name: "metrics-queue" })).status, 200);
  const up = await uploadScript(p, "metrics-worker", SCRIPT, {
    bindings: [
      { type: "kv_namespace", name: "KV", namespace_id: ns },
      { type: "r2_bucket", name: "B", bucket_name: "metrics-bucket" },
      { type: "d1", name: "DB", id: db },
      { type: "queue", name: "Q", queue_name: "metrics-queue" },
    ],
  });
  assert.equal(up.status, 200, JSON.stringify(up.body));

  for (let i = 0; i < 3; i++) assert.equal((await hit(p, "metrics-worker", "/")).status, 200);
  assert.equal((await hit(p, "metrics-worker", "/kv")).text.length, 1000);
  assert.equal((await hit(p, "metrics-worker", "/r2")).text.length, 2000);
  assert.equal((await hit(p, "metrics-worker", "/d1")).status, 200);
  assert.equal((await hit(p, "metrics-worker", "/queue")).text, "sent");
  assert.equal((await hit(p, "metrics-worker", "/fetch")).text, "fetched");
  assert.equal((await hit(p, "metrics-worker", "/fail")).status, 500);

  const text = await scrape(`http://127.0.0.1:${port}/metrics`);
  const s = (name: string, labels = "") => sample(text, `edgeplatform_${name}`, labels) ?? 0;
  assert.equal(s("workers_invocations_total", 'script="metrics-worker",status_class="2xx"'), 8);
  assert.equal(s("workers_invocations_total", 'script="metrics-worker",status_class="5xx"'), 1, "the exception is an error");
  assert.ok(s("workers_wall_seconds_total", 'script="metrics-worker"') > 0);
  assert.equal(s("workers_invocation_duration_seconds_count"), 9);
  assert.ok(s("workers_cpu_seconds_total", 'script="metrics-worker"') > 0, "its workerd's CPU time");
  assert.equal(s("workers_subrequests_total", 'script="metrics-worker"'), 1);

  assert.equal(s("kv_operations_total", 'op="put",via="binding",outcome="ok"'), 1);
  assert.equal(s("kv_operations_total", 'op="get",via="binding",outcome="ok"'), 1);
  assert.equal(s("kv_bytes_total", 'op="put",direction="in"'), 1000);
  assert.equal(s("kv_bytes_total", 'op="get",direction="out"'), 1000);
  assert.equal(s("r2_operations_total", 'op="put",via="binding",outcome="ok"'), 1);
  assert.equal(s("r2_operations_total", 'op="get",via="binding",outcome="ok"'), 1);
  assert.ok(s("r2_bytes_total", 'op="put",direction="in"') >= 2000, "the body and the operation's own metadata");
  assert.equal(s("r2_bytes_total", 'op="get",direction="out"') >= 2000, true);
  assert.equal(s("d1_operations_total", 'op="query",via="binding",outcome="ok"'), 1);
  assert.equal(s("queues_operations_total", 'op="send",via="binding",outcome="ok"'), 1);
  assert.equal(s("queues_operations_total", 'op="send_batch",via="binding",outcome="ok"'), 1);
  assert.equal(s("queues_backlog_messages"), 3, "no consumer: all three wait");
  assert.ok(s("queues_backlog_bytes") > 0);
  assert.equal(s("queues"), 1);
  assert.ok(!text.includes(ns) && !text.includes("metrics-bucket") && !text.includes("metrics-queue"), "no resource becomes a label");
  await assertPromtoolAccepts(t, text);
});

test("the script label is bounded: past 500 scripts on a node, the others are counted under (other)", () => {
  const metrics = new WorkersMetrics(new Registry(), { names: () => [], pids: () => [] });
  for (let i = 0; i < MAX_SCRIPT_LABELS; i++) assert.equal(metrics.scriptLabel(`script-${i}`), `script-${i}`);
  assert.equal(metrics.scriptLabel("one-too-many"), OTHER_SCRIPTS);
  assert.equal(metrics.scriptLabel("script-7"), "script-7", "a script with a label keeps it");
});
