import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { request } from "undici";
import type { TestPlatform } from "../../core/testing/platform.js";
import WebSocket from "ws";
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
  assert.match(split.body.errors[0].message, /Durable Objects: here it runs one version at a time/);
  assert.equal((await hit(p, "gradual-objects", "/")).text, "counted");
});

const AFFINITY = "gradual-affinity";
/** A version answering its label over HTTP, and as the first message of a WebSocket. */
const affine = (label: string) => `export default {
  fetch(req) {
    if (req.headers.get("upgrade") !== "websocket") return new Response(${JSON.stringify(label)});
    const [client, server] = Object.values(new WebSocketPair());
    server.accept();
    server.addEventListener("close", (e) => server.close(e.code, "bye"));
    server.send(${JSON.stringify(label)});
    return new Response(null, { status: 101, webSocket: client });
  },
};`;
const KEY = "Cloudflare-Workers-Version-Key";
const OVERRIDE = "Cloudflare-Workers-Version-Overrides";

/** The answers of `n` requests to the affinity Worker with these headers (one after another). */
async function answers(n: number, headers: Record<string, string>): Promise<Set<string>> {
  const seen = new Set<string>();
  for (let i = 0; i < n; i++) {
    const r = await hit(p, AFFINITY, "/", { headers });
    seen.add(`${r.status} ${r.text}`);
  }
  return seen;
}

/** The version each key is served by (each asked `n` times; a key answered by both versions is a failure). */
async function versionsOfKeys(keys: readonly string[], n: number): Promise<Map<string, string>> {
  const byKey = new Map<string, string>();
  for (const key of keys) {
    const seen = [...(await answers(n, { [KEY]: key }))];
    assert.equal(seen.length, 1, `key ${key.slice(0, 20)} was served by ${seen.join(" and ")}`);
    byKey.set(key, seen[0]!);
  }
  return byKey;
}

/** The first message of a WebSocket to the affinity Worker (listened for from the start: it may come with the upgrade's answer). */
function firstMessage(headers: Record<string, string>): Promise<string> {
  const port = new URL(p.url).port;
  const ws = new WebSocket(`ws://127.0.0.1:${port}/`, { headers: { ...headers, host: `${AFFINITY}.workers.localhost:${port}` } });
  return new Promise<string>((resolve, reject) => {
    ws.once("message", (data) => {
      resolve(String(data));
      ws.close();
    });
    ws.once("unexpected-response", (_req, res) => reject(new Error(`WebSocket refused with ${res.statusCode}`)));
    ws.once("error", reject);
  });
}

const keysOn = (byKey: Map<string, string>, answer: string) => [...byKey].filter(([, a]) => a === answer).map(([k]) => k);

test("version affinity: one Cloudflare-Workers-Version-Key is always served by one version (HTTP, WebSocket, service binding); keys spread by the shares; an override wins", async () => {
  const up = await uploadScript(p, AFFINITY, affine("one"));
  assert.equal(up.status, 200, JSON.stringify(up.body));
  const v1: string = up.body.result.deployment_id;
  const v2: string = (await uploadVersionOf(p, AFFINITY, affine("two"))).body.result.id;
  const split = (share2: number) =>
    deploy(
      [
        [v1, 100 - share2],
        [v2, share2],
      ],
      { name: AFFINITY },
    );
  assert.equal((await split(50)).status, 200);

  const keys = Array.from({ length: 40 }, (_, i) => `session-${i}`);
  const at50 = await versionsOfKeys(keys, 8);
  const [onOne, onTwo] = [keysOn(at50, "200 one"), keysOn(at50, "200 two")];
  assert.ok(onOne.length >= 5 && onTwo.length >= 5, `keys spread over both versions: ${onOne.length} / ${onTwo.length}`);
  // Without a key, requests are drawn by the shares, so one client meets both versions.
  assert.deepEqual([...(await answers(60, {}))].sort(), ["200 one", "200 two"]);

  // The pick depends on the key and the shares only: a new deployment with the same shares keeps every key where it was.
  assert.equal((await split(50)).status, 200);
  assert.deepEqual(await versionsOfKeys(keys, 2), at50);

  // The override header wins over the key, both ways.
  assert.deepEqual([...(await answers(5, { [KEY]: onOne[0]!, [OVERRIDE]: `${AFFINITY}="${v2}"` }))], ["200 two"]);
  assert.deepEqual([...(await answers(5, { [KEY]: onTwo[0]!, [OVERRIDE]: `${AFFINITY}="${v1}"` }))], ["200 one"]);
  // An override that is not applied (another Worker's entry) leaves the key in charge.
  assert.deepEqual([...(await answers(5, { [KEY]: onTwo[0]!, [OVERRIDE]: `someone-else="${v1}"` }))], ["200 two"]);

  // A WebSocket upgrade with a key goes where HTTP requests with that key go.
  for (const [key, label] of [
    [onOne[0]!, "one"],
    [onTwo[0]!, "two"],
  ]) {
    for (let i = 0; i < 3; i++) assert.equal(await firstMessage({ [KEY]: key }), label, `WebSocket with key ${key}`);
  }

  // A service binding's fetch carrying the header (the calling Worker sets it) is routed by it too.
  const caller = await uploadScript(
    p,
    "gradual-affinity-caller",
    `export default { async fetch(req, env) {
      const key = new URL(req.url).searchParams.get("key");
      const r = await env.TARGET.fetch("http://target/", { headers: { "${KEY}": key } });
      return new Response(await r.text());
    } };`,
    { bindings: [{ type: "service", name: "TARGET", service: AFFINITY }] },
  );
  assert.equal(caller.status, 200, JSON.stringify(caller.body));
  for (const key of [...onOne.slice(0, 3), ...onTwo.slice(0, 3)]) {
    for (let i = 0; i < 3; i++) {
      const r = await hit(p, "gradual-affinity-caller", `/?key=${encodeURIComponent(key)}`);
      assert.equal(`${r.status} ${r.text}`, at50.get(key), `service binding call with key ${key}`);
    }
  }

  // Odd keys are keys like any other: bytes RFC 9110 allows in a field value, and one as large as the head limit
  // leaves room for. A head over the limit is refused by the HTTP parser (431), never a 500.
  for (const odd of ['"; , = \\ (x)', "k".repeat(30 * 1024)]) assert.equal((await answers(6, { [KEY]: odd })).size, 1, odd.slice(0, 20));
  assert.equal((await hit(p, AFFINITY, "/", { headers: { [KEY]: "k".repeat(40 * 1024) } })).status, 431);
  assert.deepEqual([...(await answers(40, { [KEY]: "" }))].sort(), ["200 one", "200 two"], "an empty key is no key: drawn by the shares");

  // A rollout moves keys onto the new version only: those on it at 10% stay on it at 50% and at 90%.
  assert.equal((await split(10)).status, 200);
  const at10 = await versionsOfKeys(keys, 2);
  assert.equal((await split(90)).status, 200);
  const at90 = await versionsOfKeys(keys, 2);
  const [two10, two90] = [keysOn(at10, "200 two"), keysOn(at90, "200 two")];
  for (const key of two10) assert.ok(onTwo.includes(key), `${key}: on v2 at 10%, not at 50%`);
  for (const key of onTwo) assert.ok(two90.includes(key), `${key}: on v2 at 50%, not at 90%`);
  assert.ok(two10.length < onTwo.length && onTwo.length < two90.length, `${two10.length} < ${onTwo.length} < ${two90.length} keys on v2`);
  // At 0%, no key reaches the version; the override still does.
  assert.equal((await split(0)).status, 200);
  assert.deepEqual(new Set((await versionsOfKeys(keys, 1)).values()), new Set(["200 one"]));
  assert.deepEqual([...(await answers(3, { [KEY]: onTwo[0]!, [OVERRIDE]: `${AFFINITY}="${v2}"` }))], ["200 two"]);
});
