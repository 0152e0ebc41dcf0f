import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { request } from "undici";
import type { TestPlatform } from "../../core/testing/platform.js";
import { createAccount, hit, startPlatform, uploadScript, uploadVersion } from "../testing/helpers.js";

// Inherit bindings, script-settings tags, references and the SDK's mislabelled upload, through the v4 API.
let p: TestPlatform;
before(async () => {
  p = await startPlatform();
});
after(() => p?.dispose());

const scripts = (account = p.accountId) => `/accounts/${account}/workers/scripts`;
const ECHO = `export default { async fetch(req, env) { return new Response([env.MODE ?? "-", env.RENAMED ?? "-", env.TOKEN ?? "-"].join(" ")); } };`;
const STRICT = { query: "?bindings_inherit=strict" };
const bindingsOf = async (name: string) =>
  ((await p.api("GET", `${scripts()}/${name}/settings`)).body.result.bindings as { name: string; type: string; text?: string }[])
    .map((b) => `${b.name}:${b.type}${b.text ? `=${b.text}` : ""}`)
    .sort();

test("an inherit binding takes the binding of the newest version (renamed with old_name); strict refuses one that names nothing, 10057", async () => {
  assert.equal((await uploadScript(p, "inh", ECHO, { bindings: [{ type: "plain_text", name: "MODE", text: "one" }] })).status, 200);
  assert.equal((await p.api("PUT", `${scripts()}/inh/secrets`, { name: "TOKEN", text: "t", type: "secret_text" })).status, 200);

  // Kept as it was, in a deploy and in a version; a secret inherited stays the Worker's.
  const again = await uploadScript(
    p,
    "inh",
    ECHO,
    {
      bindings: [
        { type: "inherit", name: "MODE" },
        { type: "inherit", name: "TOKEN" },
      ],
    },
    STRICT,
  );
  assert.equal(again.status, 200, JSON.stringify(again.body));
  assert.equal((await hit(p, "inh", "/")).text, "one - t");
  const renamed = await uploadVersion(p, "inh", ECHO, { bindings: [{ type: "inherit", name: "RENAMED", old_name: "MODE" }] }, STRICT);
  assert.equal(renamed.status, 200, JSON.stringify(renamed.body));
  assert.deepEqual(
    (renamed.body.result.resources.bindings as { name: string; type: string }[]).map((b) => b.name),
    ["RENAMED", "TOKEN"],
  );

  // Strict: a name the version does not have is refused with the hosted code and wording wrangler reads; nothing changes.
  const before = await p.api("GET", `${scripts()}/inh/versions`);
  const missing = await uploadScript(p, "inh", ECHO, { bindings: [{ type: "inherit", name: "NOPE" }] }, STRICT);
  assert.equal(missing.status, 400);
  assert.equal(missing.body.errors[0].code, 10057);
  assert.match(missing.body.errors[0].message, /^inherit binding 'NOPE' is invalid/);
  const byVersion = await uploadScript(
    p,
    "inh",
    ECHO,
    { bindings: [{ type: "inherit", name: "MODE", version_id: "00000000-0000-4000-8000-000000000000" }] },
    STRICT,
  );
  assert.equal(byVersion.body.errors[0].code, 10057);
  assert.equal((await p.api("GET", `${scripts()}/inh/versions`)).body.result_info.total_count, before.body.result_info.total_count);
  assert.equal((await hit(p, "inh", "/")).text, "one - t");

  // Without strict, one that names nothing is dropped; one naming an older version's binding by version_id is taken.
  const firstVersion = (before.body.result.items as { id: string; number: number }[]).find((v) => v.number === 1)!.id;
  const loose = await uploadScript(p, "inh", ECHO, {
    bindings: [
      { type: "inherit", name: "NOPE" },
      { type: "inherit", name: "MODE", version_id: firstVersion },
    ],
  });
  assert.equal(loose.status, 200, JSON.stringify(loose.body));
  assert.deepEqual(await bindingsOf("inh"), ["MODE:plain_text=one", "TOKEN:secret_text"]);

  // A Worker with no version yet has nothing to inherit; a secret cannot be renamed by a version.
  const fresh = await uploadScript(p, "inh-new", ECHO, { bindings: [{ type: "inherit", name: "MODE" }] }, STRICT);
  assert.equal(fresh.body.errors[0].code, 10057);
  const secretRename = await uploadScript(p, "inh", ECHO, { bindings: [{ type: "inherit", name: "OTHER", old_name: "TOKEN" }] }, STRICT);
  assert.equal(secretRename.status, 400);
  const badQuery = await uploadScript(p, "inh", ECHO, {}, { query: "?bindings_inherit=lenient" });
  assert.equal(badQuery.status, 400);

  // Another account's Worker of another name cannot be inherited from: its versions are not this Worker's.
  const other = await createAccount(p, "inherit-other");
  const theirs = await uploadScript(
    p,
    "inh-theirs",
    ECHO,
    { bindings: [{ type: "inherit", name: "MODE" }] },
    { ...STRICT, accountId: other, headers: p.keyHeaders() },
  );
  assert.equal(theirs.body.errors[0].code, 10057);
});

test("script-settings tags are stored and returned (wrangler 4's service and environment tags); bad tags are a 400 that changes nothing", async () => {
  assert.equal((await uploadScript(p, "tagged", ECHO)).status, 200);
  const url = `${scripts()}/tagged/script-settings`;
  assert.deepEqual((await p.api("GET", url)).body.result.tags, []);
  const set = await p.api("PATCH", url, { tags: ["cf:service=tagged", "cf:environment=prod"], observability: { enabled: false } });
  assert.equal(set.status, 200, JSON.stringify(set.body));
  assert.deepEqual(set.body.result.tags, ["cf:service=tagged", "cf:environment=prod"]);
  assert.equal((await p.api("PATCH", url, { tags: Array.from({ length: 9 }, (_, i) => `t${i}`) })).status, 400);
  assert.equal((await p.api("PATCH", url, { tags: [1] })).status, 400);
  assert.equal((await p.api("PATCH", url, { tags: ["a", "a"] })).status, 400);
  assert.equal((await p.api("PATCH", url, { logpush: true })).status, 400);
  assert.deepEqual((await p.api("GET", url)).body.result.tags, ["cf:service=tagged", "cf:environment=prod"]);
  // Kept across a redeploy, shown by the services view wrangler reads before deploying.
  assert.equal((await uploadScript(p, "tagged", ECHO)).status, 200);
  const service = await p.api("GET", `/accounts/${p.accountId}/workers/services/tagged`);
  assert.deepEqual(service.body.result.default_environment.script.tags, ["cf:service=tagged", "cf:environment=prod"]);
  assert.equal(service.body.result.default_environment.script.last_deployed_from, "api");
  assert.deepEqual((await p.api("PATCH", url, { tags: [] })).body.result.tags, []);
});

test("references list the Workers of the account bound to a Worker by a service binding; tails by consumer are empty; 404 for none", async () => {
  assert.equal((await uploadScript(p, "backend", ECHO)).status, 200);
  assert.equal((await uploadScript(p, "frontend", ECHO, { bindings: [{ type: "service", name: "API", service: "backend" }] })).status, 200);
  const refs = await p.api("GET", `${scripts()}/backend/references`);
  assert.equal(refs.status, 200);
  assert.deepEqual(refs.body.result.services.incoming, [{ service: "frontend", environment: "production" }]);
  const out = await p.api("GET", `${scripts()}/frontend/references`);
  assert.deepEqual([out.body.result.services.incoming, out.body.result.services.outgoing], [[], [{ service: "backend", environment: "production" }]]);
  assert.deepEqual((await p.api("GET", `/accounts/${p.accountId}/workers/tails/by-consumer/backend`)).body.result, []);
  assert.equal((await p.api("GET", `${scripts()}/nothing/references`)).status, 404);
  const other = await createAccount(p, "references-other");
  assert.equal((await p.api("GET", `${scripts(other)}/backend/references`, undefined, p.keyHeaders())).status, 404);
});

test("a multipart upload labelled application/javascript (what the cloudflare SDK 7 sends) is read as the form it is; other bodies stay 415", async () => {
  const form = new FormData();
  form.append(
    "metadata",
    JSON.stringify({ main_module: "index.js", compatibility_date: "2024-09-01", bindings: [{ type: "plain_text", name: "MODE", text: "sdk" }] }),
  );
  form.append("index.js", new Blob([ECHO], { type: "application/javascript+module" }), "index.js");
  const body = Buffer.from(await new Response(form).arrayBuffer());
  const send = (b: Buffer | string) =>
    request(`${p.apiUrl}${scripts()}/labelled`, { method: "PUT", headers: { ...p.headers(), "content-type": "application/javascript" }, body: b });
  const res = await send(body);
  assert.equal(res.statusCode, 200, await res.body.text());
  assert.equal((await hit(p, "labelled", "/")).text, "sdk - -");
  const plain = await send("export default { fetch() { return new Response('x') } };".repeat(3));
  assert.equal(plain.statusCode, 415);
  await plain.body.dump();
  const short = await send("x");
  assert.equal(short.statusCode, 415);
  await short.body.dump();
});
