import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { request } from "undici";
import type { TestPlatform } from "../../core/testing/platform.js";
import { createAccount, hit, startPlatform, uploadScript, uploadVersion as uploadVersionOf } from "../testing/helpers.js";

/**
 * Gradual deployments: two versions of a Worker share its traffic, each request served by one of them (by share, or by
 * the `Cloudflare-Workers-Version-Overrides` header), both with the Worker's bindings and secrets.
 */

let p: TestPlatform;
let other: string;
let namespaceId: string;
before(async () => {
  p = await startPlatform();
  other = await createAccount(p, "gradual-other");
  namespaceId = (await p.api("POST", `/accounts/${p.accountId}/storage/kv/namespaces`, { title: "gradual" })).body.result.id;
});
after(() => p?.dispose());

const NAME = "gradual";
const scripts = (account = p.accountId) => `/accounts/${account}/workers/scripts`;
/** A version answering its label, the KV value of "k" and its TOKEN secret. */
const labelled = (label: string) =>
  `export default { async fetch(req, env) { return new Response(${JSON.stringify(label)} + " " + (await env.KV.get("k")) + " " + (env.TOKEN ?? "-")); } };`;
const bindings = () => [{ type: "kv_namespace", name: "KV", namespace_id: namespaceId }];

const uploadVersion = (name: string, code: string) => uploadVersionOf(p, name, code, { bindings: bindings() });

const deploy = (versions: [string, number][], opts: { account?: string; name?: string; headers?: Record<string, string> } = {}) =>
  p.api(
    "POST",
    `${scripts(opts.account)}/${opts.name ?? NAME}/deployments`,
    { strategy: "percentage", versions: versions.map(([version_id, percentage]) => ({ version_id, percentage })) },
    opts.headers,
  );

/** How many of `n` requests each answer got (requests go one after another: no timing is measured). */
async function tally(n: number, headers?: Record<string, string>): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    const r = await hit(p, NAME, "/", { headers });
    const key = `${r.status} ${r.text}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

test("a deployment of two versions serves both, by share or by the version override header, with the Worker's bindings and secrets", async () => {
  const put = await request(`${p.apiUrl}/accounts/${p.accountId}/storage/kv/namespaces/${namespaceId}/values/k`, {
    method: "PUT",
    headers: { ...p.headers(), "content-type": "text/plain" },
    body: "kv-value",
  });
  assert.equal(put.statusCode, 200, await put.body.text());
  const first = await uploadScript(p, NAME, labelled("one"), { bindings: bindings() });
  assert.equal(first.status, 200, JSON.stringify(first.body));
  assert.equal((await p.api("PUT", `${scripts()}/${NAME}/secrets`, { name: "TOKEN", text: "tok", type: "secret_text" })).status, 200);
  // The secret change made the live version: it is "one" with the secret.
  const v1: string = (await p.api("GET", `${scripts()}/${NAME}/deployments`)).body.result.deployments[0].versions[0].version_id;
  const up2 = await uploadVersion(NAME, labelled("two"));
  assert.equal(up2.status, 200, JSON.stringify(up2.body));
  const v2: string = up2.body.result.id;

  const split = await deploy([
    [v1, 50],
    [v2, 50],
  ]);
  assert.equal(split.status, 200, JSON.stringify(split.body));
  assert.deepEqual(split.body.result.versions, [
    { version_id: v1, percentage: 50 },
    { version_id: v2, percentage: 50 },
  ]);
  const counts = await tally(400);
  assert.deepEqual(
    [...counts.keys()].sort(),
    ["200 one kv-value tok", "200 two kv-value tok"],
    "every answer is one of the two versions, with KV and the secret",
  );
  for (const [answer, n] of counts) assert.ok(n >= 5, `${answer} answered only ${n} of 400 times`);

  // The override header picks a version of the deployment; an entry for another Worker, or a header that does not
  // parse, is ignored (the request is served by share).
  const only = async (headers: Record<string, string>) => [...(await tally(20, headers)).keys()];
  assert.deepEqual(await only({ "Cloudflare-Workers-Version-Overrides": `${NAME}="${v2}"` }), ["200 two kv-value tok"]);
  assert.deepEqual(await only({ "Cloudflare-Workers-Version-Overrides": `someone-else="${v2}", ${NAME}="${v1}"` }), ["200 one kv-value tok"]);
  for (const ignored of [`${NAME}=unquoted`, `${NAME}="not-a-deployed-version"`, `"broken`]) {
    const r = await hit(p, NAME, "/", { headers: { "Cloudflare-Workers-Version-Overrides": ignored } });
    assert.equal(r.status, 200, ignored);
    assert.match(r.text, /^(one|two) kv-value tok$/);
  }

  const listed = await p.api("GET", `${scripts()}/${NAME}/deployments`);
  assert.deepEqual(listed.body.result.deployments[0].versions, split.body.result.versions);
  for (const v of [v1, v2]) {
    const shown = await p.api("GET", `${scripts()}/${NAME}/versions/${v}`);
    assert.deepEqual(shown.body.result.resources.script.handlers, ["fetch"], "both versions run: their handlers are known");
  }

  // A secret change would make a new version of one of the two: refused, as hosted (wrangler reads code 10215).
  const secret = await p.api("PUT", `${scripts()}/${NAME}/secrets`, { name: "TOKEN", text: "other", type: "secret_text" });
  assert.equal(secret.status, 400);
  assert.equal(secret.body.errors[0].code, 10215);

  // 100/0: only the first version answers; the 0% one is still reachable by the override.
  assert.equal(
    (
      await deploy([
        [v1, 100],
        [v2, 0],
      ])
    ).status,
    200,
  );
  assert.deepEqual([...(await tally(100)).keys()], ["200 one kv-value tok"]);
  assert.deepEqual(await only({ "Cloudflare-Workers-Version-Overrides": `${NAME}="${v2}"` }), ["200 two kv-value tok"]);

  // 70/30 the other way round: the primary is now v2.
  assert.equal(
    (
      await deploy([
        [v1, 30],
        [v2, 70],
      ])
    ).status,
    200,
  );
  const ramped = await tally(200);
  assert.ok((ramped.get("200 one kv-value tok") ?? 0) >= 3 && (ramped.get("200 two kv-value tok") ?? 0) >= 3, JSON.stringify([...ramped]));

  // One version at 100% again (a rollback): only it answers.
  assert.equal((await deploy([[v2, 100]])).status, 200);
  assert.deepEqual([...(await tally(50)).keys()], ["200 two kv-value tok"]);
  assert.deepEqual(
    await only({ "Cloudflare-Workers-Version-Overrides": `${NAME}="${v1}"` }),
    ["200 two kv-value tok"],
    "an override names a version of the current deployment only",
  );
  assert.equal((await p.api("PUT", `${scripts()}/${NAME}/secrets`, { name: "TOKEN", text: "tok", type: "secret_text" })).status, 200);
});

test("refused deployments: more than two versions, shares not adding up to 100, a version twice, an unknown or another account's version; nothing changes", async () => {
  const live = (await p.api("GET", `${scripts()}/${NAME}/deployments`)).body.result.deployments[0].versions as { version_id: string }[];
  assert.equal(live.length, 1);
  const current = live[0].version_id;
  const answerBefore = (await hit(p, NAME, "/")).text;
  const a = await uploadVersion(NAME, labelled("three"));
  const b = await uploadVersion(NAME, labelled("four"));
  const [v3, v4]: string[] = [a.body.result.id, b.body.result.id];

  const three = await deploy([
    [current, 40],
    [v3, 30],
    [v4, 30],
  ]);
  assert.equal(three.status, 400);
  assert.match(three.body.errors[0].message, /at most 2 versions/);
  const short = await deploy([
    [current, 60],
    [v3, 30],
  ]);
  assert.equal(short.status, 400);
  assert.match(short.body.errors[0].message, /add up to 100; these add up to 90/);
  assert.equal((await deploy([[v3, 50]])).status, 400, "one version must take 100%");
  const twice = await deploy([
    [v3, 50],
    [v3, 50],
  ]);
  assert.equal(twice.status, 400);
  assert.match(twice.body.errors[0].message, /named more than once/);
  const unknown = await deploy([
    [current, 50],
    ["00000000-0000-4000-8000-000000000000", 50],
  ]);
  assert.equal(unknown.status, 404);

  // Another account: its own Worker's version cannot be named in this one's deployment, nor can it deploy this one's.
  const key = p.keyHeaders();
  const theirs = await uploadScript(
    p,
    "gradual-theirs",
    `export default { fetch() { return new Response("theirs"); } };`,
    {},
    { accountId: other, headers: key },
  );
  assert.equal(theirs.status, 200, JSON.stringify(theirs.body));
  const foreign = await deploy([
    [current, 50],
    [theirs.body.result.deployment_id, 50],
  ]);
  assert.equal(foreign.status, 404);
  const intruder = await deploy(
    [
      [current, 50],
      [v3, 50],
    ],
    { account: other, headers: key },
  );
  assert.equal(intruder.status, 404);
  const intoTheirs = await deploy(
    [
      [theirs.body.result.deployment_id, 50],
      [v3, 50],
    ],
    { account: other, name: "gradual-theirs", headers: key },
  );
  assert.equal(intoTheirs.status, 404, "a version of this account's Worker is unknown to the other's");

  const after = (await p.api("GET", `${scripts()}/${NAME}/deployments`)).body.result.deployments[0].versions;
  assert.deepEqual(after, [{ version_id: current, percentage: 100 }]);
  assert.deepEqual([...(await tally(30)).keys()], [`200 ${answerBefore}`]);
  assert.equal((await hit(p, "gradual-theirs", "/")).text, "theirs");
});

test("a Worker with Durable Objects keeps refusing a split", async () => {
  const counter = `import { DurableObject } from "cloudflare:workers";
export class Counter extends DurableObject { async fetch() { return new Response("counted"); } }
export default { fetch(req, env) { return env.COUNTER.get(env.COUNTER.idFromName("one")).fetch(req); } };`;
  const objectBindings = [{ type: "durable_object_namespace", name: "COUNTER", class_name: "Counter" }];
  const v1 = await uploadScript(p, "gradual-objects", counter, { bindings: objectBindings, migrations: { new_tag: "v1", new_sqlite_classes: ["Counter"] } });
  assert.equal(v1.status, 200, JSON.stringify(v1.body));
  const v2: string = (await uploadVersionOf(p, "gradual-objects", counter, { bindings: objectBindings })).body.result.id;
  const split = await deploy(
    [
      [v1.body.result.deployment_id, 50],
      [v2, 50],
    ],
    { name: "gradual-objects" },
  );
  assert.equal(split.status, 400);
  assert.match(split.body.errors[0].message, /Durable Objects or static assets/);
  assert.equal((await hit(p, "gradual-objects", "/")).text, "counted");
});
