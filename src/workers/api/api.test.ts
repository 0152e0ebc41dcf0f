import assert from "node:assert/strict";
import { request } from "undici";
import { after, before, test } from "node:test";
import type { TestPlatform } from "../../core/testing/platform.js";
import { createAccount, hit, uploadScript, startPlatform } from "../testing/helpers.js";

let p: TestPlatform;
let nsId: string;
const hello = `export default { fetch(req, env) { return new Response("hello " + (env.GREETING ?? "")); } };`;

before(async () => {
  p = await startPlatform();
  nsId = (await p.api("POST", `/accounts/${p.accountId}/storage/kv/namespaces`, { title: "api-ns" })).body.result.id;
});
after(() => p?.dispose());

const scripts = () => `/accounts/${p.accountId}/workers/scripts`;
// Minted with the global key: the bootstrap token does not reach accounts created after it.
const token = async (permissions: string[], accountId = p.accountId) =>
  (await p.api("POST", "/user/tokens", { name: permissions.join("+"), permissions, account_id: accountId }, p.keyHeaders())).body.result.value as string;

test("uploads without the parts a script needs get clear 400 errors and store nothing", async () => {
  const notMultipart = await p.api("PUT", `${scripts()}/bad-upload`, { main_module: "index.js" });
  assert.equal(notMultipart.status, 400);
  assert.match(notMultipart.body.errors[0].message, /multipart/);

  const cases: [Record<string, unknown>, RegExp][] = [
    [{ main_module: "other.js" }, /main_module "other.js" is not one of the uploaded parts/],
    [{ main_module: undefined }, /main_module is required/],
    [{ bindings: [{ type: "plain_text", name: "not-an-identifier", text: "x" }] }, /is not a valid JavaScript identifier/],
    [{ bindings: [{ type: "durable_object_namespace", name: "DO" }] }, /class_name/],
    [{ bindings: [{ type: "durable_object_namespace", name: "DO", class_name: "Counter" }] }, /class Counter has no Durable Object namespace/],
    // What wrangler 3 sends for a [[d1_databases]] entry, naming a database the account does not have.
    [
      { bindings: [{ type: "d1", name: "DB", id: "00000000-0000-0000-0000-000000000000" }] },
      /D1 database "00000000-0000-0000-0000-000000000000" does not exist/,
    ],
    [{ bindings: [{ type: "r2_bucket", name: "B", bucket_name: "no-such-bucket" }] }, /R2 bucket "no-such-bucket" does not exist/],
    [
      { bindings: [{ type: "kv_namespace", name: "K", namespace_id: "0123456789abcdef0123456789abcdef" }] },
      /KV namespace "0123456789abcdef0123456789abcdef" does not exist/,
    ],
    [
      {
        bindings: [
          { type: "plain_text", name: "A", text: "1" },
          { type: "plain_text", name: "A", text: "2" },
        ],
      },
      /used by more than one binding/,
    ],
    [{ compatibility_date: "yesterday" }, /compatibility_date: must be a date/],
  ];
  for (const [meta, message] of cases) {
    const r = await uploadScript(p, "bad-upload", hello, meta);
    assert.equal(r.status, 400, JSON.stringify(meta));
    assert.equal(r.body.errors[0].code, 10021);
    assert.match(r.body.errors[0].message, message);
  }
  const badName = await uploadScript(p, "Bad_Name", hello);
  assert.equal(badName.status, 400);
  assert.match(badName.body.errors[0].message, /Worker name "Bad_Name" is invalid/);
  assert.equal((await p.api("GET", scripts())).body.result.length, 0);
});

test("the requests wrangler's deploy makes get the answers it needs", async () => {
  const before = await p.api("GET", `/accounts/${p.accountId}/workers/services/wrangler-like`);
  assert.equal(before.status, 404);
  assert.equal(before.body.errors[0].code, 10090);
  const up = await uploadScript(p, "wrangler-like", hello, {
    bindings: [
      { type: "plain_text", name: "GREETING", text: "there" },
      { type: "kv_namespace", name: "MY_KV", namespace_id: nsId },
    ],
    compatibility_flags: ["nodejs_compat"],
    keep_bindings: ["secret_text", "secret_key"],
    code_update_strategy: { mode: "deferred", max_delay: 300 },
  });
  assert.equal(up.status, 200, JSON.stringify(up.body));
  assert.ok(up.body.result.deployment_id);
  assert.equal(up.body.result.id, "wrangler-like");
  assert.equal(typeof up.body.result.startup_time_ms, "number");
  assert.match(up.body.result.url, /^http:\/\/wrangler-like\.workers\.localhost:\d+$/);
  assert.equal((await hit(p, "wrangler-like", "/")).text, "hello there");

  const base = `/accounts/${p.accountId}/workers`;
  assert.equal((await p.api("GET", `${base}/services/wrangler-like`)).body.result.id, "wrangler-like");
  const settings = (await p.api("GET", `${base}/scripts/wrangler-like/settings`)).body.result;
  assert.deepEqual(settings.compatibility_flags, ["nodejs_compat"]);
  assert.deepEqual(
    settings.bindings.map((b: { name: string }) => b.name),
    ["GREETING", "MY_KV"],
  );
  const deployments = (await p.api("GET", `${base}/scripts/wrangler-like/deployments`)).body.result.deployments;
  assert.equal(deployments[0].versions[0].version_id, up.body.result.deployment_id);
  assert.deepEqual((await p.api("GET", `${base}/workers/wrangler-like`)).body.result.subdomain, { enabled: true, previews_enabled: false });
  assert.equal((await p.api("GET", `${base}/subdomain`)).body.result.subdomain, "workers.localhost");
  assert.equal((await p.api("POST", `${base}/scripts/wrangler-like/subdomain`, { enabled: true })).body.result.enabled, true);
  assert.equal((await p.api("GET", `${base}/scripts/wrangler-like/subdomain`)).body.result.enabled, true);
  const list = (await p.api("GET", scripts())).body.result;
  assert.deepEqual(
    list.map((s: { id: string }) => s.id),
    ["wrangler-like"],
  );

  // Download: the modules as multipart, as uploaded.
  const dl = await request(`${p.apiUrl}${scripts()}/wrangler-like`, { headers: p.headers() });
  assert.equal(dl.statusCode, 200);
  const form = await new Response(Buffer.from(await dl.body.arrayBuffer()), { headers: { "content-type": String(dl.headers["content-type"]) } }).formData();
  assert.equal(await (form.get("index.js") as Blob).text(), hello);
});

test("a compatibility date later than the runtime's runs with the runtime's newest, and the answer says so", async () => {
  const up = await uploadScript(p, "from-the-future", hello, { compatibility_date: "2099-01-01" });
  assert.equal(up.status, 200, JSON.stringify(up.body));
  assert.equal(up.body.messages[0].code, 10200);
  assert.match(
    up.body.messages[0].message,
    /compatibility_date 2099-01-01 is later than this platform's workerd supports; the Worker runs with \d{4}-\d{2}-\d{2}/,
  );
  assert.equal((await hit(p, "from-the-future", "/")).text, "hello ");
  const settings = (await p.api("GET", `/accounts/${p.accountId}/workers/scripts/from-the-future/settings`)).body.result;
  assert.equal(settings.compatibility_date, "2099-01-01");
  assert.match(p.logs(), /"script":"from-the-future".*"runs_with":"\d{4}-\d{2}-\d{2}"/);
  assert.deepEqual((await uploadScript(p, "from-the-past", hello)).body.messages, []);
  for (const name of ["from-the-future", "from-the-past"]) assert.equal((await p.api("DELETE", `${scripts()}/${name}`)).status, 200);
});

test("wrangler 3's versions flow: upload a version (not live yet), deploy it at 100%, patch script settings", async () => {
  assert.equal((await uploadScript(p, "versioned", hello)).status, 200);
  const form = new FormData();
  form.append(
    "metadata",
    JSON.stringify({
      main_module: "index.js",
      compatibility_date: "2024-09-01",
      bindings: [{ type: "plain_text", name: "GREETING", text: "v2" }],
      keep_bindings: ["secret_text"],
      annotations: {},
    }),
  );
  form.append("index.js", new Blob([hello], { type: "application/javascript+module" }), "index.js");
  const enc = new Response(form);
  const res = await request(`${p.apiUrl}${scripts()}/versioned/versions`, {
    method: "POST",
    headers: { ...p.headers(), "content-type": enc.headers.get("content-type")! },
    body: Buffer.from(await enc.arrayBuffer()),
  });
  const version = ((await res.body.json()) as any).result;
  assert.equal(res.statusCode, 200);
  assert.match(version.id, /^[0-9a-f-]{36}$/);
  assert.equal(version.number, 2);
  assert.equal((await hit(p, "versioned", "/")).text, "hello ", "an uploaded version is not live before a deployment names it");
  const dep = await p.api("POST", `${scripts()}/versioned/deployments`, { strategy: "percentage", versions: [{ version_id: version.id, percentage: 100 }] });
  assert.equal(dep.status, 200);
  assert.equal((await hit(p, "versioned", "/")).text, "hello v2");
  const split = await p.api("POST", `${scripts()}/versioned/deployments`, {
    strategy: "percentage",
    versions: [
      { version_id: version.id, percentage: 50 },
      { version_id: "other", percentage: 50 },
    ],
  });
  assert.equal(split.status, 404, "a split naming a version the Worker does not have (gradual deployments: gradual.test.ts)");
  assert.match(split.body.errors[0].message, /has no version other/);
  assert.equal((await hit(p, "versioned", "/")).text, "hello v2");
  assert.equal((await p.api("PATCH", `${scripts()}/versioned/script-settings`, { logpush: false, observability: { enabled: false } })).status, 200);
  assert.equal((await p.api("GET", `${scripts()}/versioned/versions`)).body.result.items[0].id, version.id);
});

test("a script's handlers are what its default export has, not a fixed answer", async () => {
  const cases: [string, string, string[]][] = [
    ["handlers-object", `export default { fetch() { return new Response("f"); }, scheduled() {}, queue() {} };`, ["fetch", "scheduled", "queue"]],
    [
      "handlers-entrypoint",
      `import { WorkerEntrypoint } from "cloudflare:workers";
export default class extends WorkerEntrypoint { fetch() { return new Response("e"); } tail() {} };`,
      ["fetch", "tail"],
    ],
    ["handlers-none", `export default {};`, []],
  ];
  for (const [name, code, handlers] of cases) {
    const up = await uploadScript(p, name, code);
    assert.equal(up.status, 200, JSON.stringify(up.body));
    assert.deepEqual([...up.body.result.handlers].sort(), [...handlers].sort(), name);
    const listed = (await p.api("GET", scripts())).body.result.find((s: { id: string }) => s.id === name);
    assert.deepEqual([...listed.handlers].sort(), [...handlers].sort(), `${name} in the list`);
    const version = (await p.api("GET", `${scripts()}/${name}/versions`)).body.result.items[0];
    assert.deepEqual([...version.resources.script.handlers].sort(), [...handlers].sort(), `${name} in its version`);
  }
  // The script still serves as uploaded (the entry module in front of it changes nothing).
  assert.equal((await hit(p, "handlers-object", "/")).text, "f");
  assert.equal((await hit(p, "handlers-entrypoint", "/")).text, "e");
  for (const [name] of cases) assert.equal((await p.api("DELETE", `${scripts()}/${name}`)).status, 200);
});

test("script settings and the subdomain toggle refuse what this platform does not have, and accept only what is true", async () => {
  assert.equal((await uploadScript(p, "settings", hello)).status, 200);
  const patch = (body: unknown) => p.api("PATCH", `${scripts()}/settings/script-settings`, body);
  const off = await patch({ logpush: false, tail_consumers: [], observability: { enabled: false, logs: { enabled: false, head_sampling_rate: 1 } } });
  assert.equal(off.status, 200, JSON.stringify(off.body));
  // The answer carries the script's tags too (wrangler 4 sets them through this path: inherit.test.ts).
  assert.deepEqual(off.body.result, {
    logpush: false,
    tail_consumers: [],
    observability: { enabled: false, logs: { enabled: false, head_sampling_rate: 1 } },
    tags: [],
  });
  const refused: [unknown, string][] = [
    [{ logpush: true }, "/logpush"],
    [{ tail_consumers: [{ service: "tail" }] }, "/tail_consumers"],
    // Workers Logs exist (logs/logs.e2e.test.ts); traces, log destinations and fields it does not know do not.
    [{ observability: { enabled: true, traces: { enabled: true } } }, "/observability/traces/enabled"],
    [{ observability: { enabled: true, logs: { destinations: ["sink"] } } }, "/observability/logs/destinations"],
    [{ observability: { enabled: true, head_sampling_rate: 2 } }, "/observability/head_sampling_rate"],
    [{ observability: { enabled: "yes" } }, "/observability/enabled"],
    [{ placement: { mode: "smart" } }, "/placement"],
  ];
  for (const [body, pointer] of refused) {
    const r = await patch(body);
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.equal(r.body.errors[0].code, 10021);
    assert.equal(r.body.errors[0].source?.pointer, pointer, JSON.stringify(r.body.errors[0]));
  }

  // The same settings in an upload's metadata (where wrangler puts them when the config has them): off deploys, on is refused.
  const uploadOff = await uploadScript(p, "settings", hello, {
    logpush: false,
    tail_consumers: [],
    observability: { enabled: false, logs: { enabled: false } },
    placement: { mode: "off" },
    usage_model: "standard",
  });
  assert.equal(uploadOff.status, 200, JSON.stringify(uploadOff.body));
  const refusedUploads: [Record<string, unknown>, string][] = [
    [{ logpush: true }, "/logpush"],
    [{ tail_consumers: [{ service: "tail" }] }, "/tail_consumers"],
    [{ observability: { enabled: true, traces: { enabled: true } } }, "/observability/traces/enabled"],
    [{ observability: { enabled: true, nonsense: 1 } }, "/observability/nonsense"],
    [{ placement: { mode: "smart" } }, "/placement/mode"],
    [{ limits: { cpu_ms: 50 } }, "/limits"],
  ];
  for (const [meta, pointer] of refusedUploads) {
    const r = await uploadScript(p, "settings-upload", hello, meta);
    assert.equal(r.status, 400, JSON.stringify(meta));
    assert.equal(r.body.errors[0].code, 10021);
    assert.equal(r.body.errors[0].source?.pointer, pointer, JSON.stringify(r.body.errors[0]));
  }
  assert.equal((await p.api("GET", `${scripts()}/settings-upload`)).status, 404, "nothing was deployed");

  const subdomain = (body: unknown) => p.api("POST", `${scripts()}/settings/subdomain`, body);
  const wranglerDefault = await subdomain({ enabled: true, previews_enabled: true });
  assert.equal(wranglerDefault.status, 200, "what wrangler 3 sends on every deploy still deploys");
  assert.deepEqual(wranglerDefault.body.result, { enabled: true, previews_enabled: false }, "previews are reported as they are: off");
  assert.equal(wranglerDefault.body.messages[0].code, 10201);
  assert.match(wranglerDefault.body.messages[0].message, /previews_enabled: this platform has no preview URLs/);
  // Turned off (what wrangler asks for a Worker deployed with routes), the Worker is not served at its URL until turned on.
  const disable = await subdomain({ enabled: false });
  assert.equal(disable.status, 200);
  assert.deepEqual(disable.body.result, { enabled: false, previews_enabled: false });
  assert.equal((await p.api("GET", `${scripts()}/settings/subdomain`)).body.result.enabled, false);
  assert.equal((await hit(p, "settings", "/x")).status, 404);
  assert.equal((await subdomain({ enabled: "no" })).status, 400);
  assert.equal((await subdomain({ routes: true })).status, 400);
  assert.equal((await subdomain({ enabled: true })).body.result.enabled, true);
  assert.equal((await p.api("GET", `${scripts()}/settings/subdomain`)).body.result.enabled, true);
  assert.equal((await hit(p, "settings", "/")).text, "hello ", "served at its URL again");
  assert.equal((await p.api("DELETE", `${scripts()}/settings`)).status, 200);
});

test("secrets: names in every answer, values in none; a change reaches the script", async () => {
  const value = "very-secret-value-8f3a1c";
  assert.equal(
    (await uploadScript(p, "with-secret", `export default { fetch(r, env) { return new Response(env.API_KEY === "${value}" ? "match" : "no"); } };`)).status,
    200,
  );
  const put = await p.api("PUT", `${scripts()}/with-secret/secrets`, { name: "API_KEY", text: value, type: "secret_text" });
  assert.equal(put.status, 200);
  assert.deepEqual(put.body.result, { name: "API_KEY", type: "secret_text" });
  assert.equal((await hit(p, "with-secret", "/")).text, "match");
  const answers = [
    put,
    await p.api("GET", `${scripts()}/with-secret/secrets`),
    await p.api("GET", `${scripts()}/with-secret/secrets/API_KEY`),
    await p.api("GET", `${scripts()}/with-secret/settings`),
    await p.api("GET", scripts()),
  ];
  for (const a of answers) assert.ok(!JSON.stringify(a.body).includes(value), "no answer carries the value");
  assert.deepEqual(answers[1].body.result, [{ name: "API_KEY", type: "secret_text" }]);
  assert.ok(
    answers[3].body.result.bindings.some(
      (b: { name: string; type: string; text?: string }) => b.name === "API_KEY" && b.type === "secret_text" && b.text === undefined,
    ),
  );

  // A secret survives a redeploy that does not mention it (deploy never sends secrets).
  assert.equal(
    (await uploadScript(p, "with-secret", `export default { fetch(r, env) { return new Response(env.API_KEY ? "still" : "gone"); } };`)).status,
    200,
  );
  assert.equal((await hit(p, "with-secret", "/")).text, "still");
  // A binding may not take a secret's name, nor a secret a binding's.
  const clash = await uploadScript(p, "with-secret", hello, { bindings: [{ type: "plain_text", name: "API_KEY", text: "x" }] });
  assert.equal(clash.status, 400);
  assert.ok(!JSON.stringify(clash.body).includes(value));

  const del = await p.api("DELETE", `${scripts()}/with-secret/secrets/API_KEY?url_encoded=true`);
  assert.equal(del.status, 200);
  assert.equal((await hit(p, "with-secret", "/")).text, "gone");
  const again = await p.api("DELETE", `${scripts()}/with-secret/secrets/API_KEY`);
  assert.equal(again.status, 404);
  const onMissing = await p.api("PUT", `${scripts()}/nope/secrets`, { name: "X", text: "y", type: "secret_text" });
  assert.equal(onMissing.status, 404);
  assert.equal(onMissing.body.errors[0].code, 10007);
  const badName = await p.api("PUT", `${scripts()}/with-secret/secrets`, { name: "1bad", text: "y" });
  assert.equal(badName.status, 400);
  const huge = "é".repeat(2561); // 5,122 bytes in UTF-8
  const tooBig = await p.api("PUT", `${scripts()}/with-secret/secrets`, { name: "BIG", text: huge });
  assert.equal(tooBig.status, 400);
  assert.match(tooBig.body.errors[0].message, /at most 5120 bytes/);
  assert.ok(!JSON.stringify(tooBig.body).includes(huge));
});

test("permissions: workers_read may look, only workers_edit may change; other accounts are out of reach", async () => {
  assert.equal((await uploadScript(p, "guarded", hello)).status, 200);
  const reader = { authorization: `Bearer ${await token(["workers_read"])}` };
  const dnsOnly = { authorization: `Bearer ${await token(["dns_read"])}` };
  assert.equal((await p.api("GET", scripts(), undefined, reader)).status, 200);
  assert.equal((await p.api("GET", `${scripts()}/guarded/secrets`, undefined, reader)).status, 200);
  assert.equal((await uploadScript(p, "guarded", hello, {}, { headers: reader })).status, 403);
  assert.equal((await p.api("PUT", `${scripts()}/guarded/secrets`, { name: "S", text: "v" }, reader)).status, 403);
  assert.equal((await p.api("DELETE", `${scripts()}/guarded`, undefined, reader)).status, 403);
  assert.equal((await p.api("GET", scripts(), undefined, dnsOnly)).status, 403);

  // A second account: its namespace cannot be bound from the first, and the first's script name is taken.
  const otherId = await createAccount(p, "Other");
  const otherNs = (await p.api("POST", `/accounts/${otherId}/storage/kv/namespaces`, { title: "theirs" }, p.keyHeaders())).body.result.id;
  const cross = await uploadScript(p, "cross", hello, { bindings: [{ type: "kv_namespace", name: "K", namespace_id: otherNs }] });
  assert.equal(cross.status, 400);
  assert.match(cross.body.errors[0].message, /does not exist in this account/);
  const taken = await uploadScript(p, "guarded", hello, {}, { accountId: otherId, headers: p.keyHeaders() });
  assert.equal(taken.status, 409);
  const scoped = { authorization: `Bearer ${await token(["workers_edit"], otherId)}` };
  assert.equal((await p.api("GET", scripts(), undefined, scoped)).status, 403);
  assert.equal((await p.api("GET", `/accounts/${otherId}/workers/scripts`, undefined, scoped)).body.result.length, 0);
});
