import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, test } from "node:test";
import Cloudflare from "cloudflare";
import { request } from "undici";
import type { TestPlatform } from "../../core/testing/platform.js";
import { createAccount, startPlatform, uploadScript } from "../testing/helpers.js";

let p: TestPlatform;
let accountB: string;
/** Headers of a token that holds DNS and Workers edit on account B only. */
let asB: Record<string, string>;
before(async () => {
  p = await startPlatform();
  accountB = await createAccount(p, "routes-b");
  const token = await p.api("POST", "/user/tokens", { name: "b-only", permissions: ["dns_edit", "workers_edit"], account_id: accountB }, p.keyHeaders());
  assert.equal(token.status, 200, JSON.stringify(token.body));
  asB = { authorization: `Bearer ${token.body.result.value}` };
});
after(() => p?.dispose());

/** A Worker that says which it is and what it was asked. */
const worker = (label: string) =>
  `export default { fetch(req) { const u = new URL(req.url); return new Response("${label} " + u.hostname + u.pathname + u.search); } };`;

/** A request to the edge port with this Host, as a browser at that hostname would send it. */
async function at(host: string, path = "/"): Promise<{ status: number; text: string }> {
  const port = new URL(p.url).port;
  const res = await request(`http://127.0.0.1:${port}${path}`, { headers: { host: `${host}:${port}` } });
  return { status: res.statusCode, text: await res.body.text() };
}

async function zoneOf(accountId: string, headers?: Record<string, string>): Promise<{ id: string; name: string }> {
  const name = `rt${randomBytes(4).toString("hex")}.example`;
  const r = await p.api("POST", "/zones", { name, account: { id: accountId } }, headers ?? p.keyHeaders());
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return { id: r.body.result.id, name };
}

const routesOf = (zone: string) => `/zones/${zone}/workers/routes`;

test("zone routes: created, listed, changed and deleted with the hosted shapes; the edge serves them by Host and path", async () => {
  const zone = await zoneOf(p.accountId);
  assert.equal((await uploadScript(p, "rt-app", worker("app"))).status, 200);
  assert.equal((await uploadScript(p, "rt-api", worker("api"))).status, 200);
  assert.equal((await at(`www.${zone.name}`, "/x")).status, 404, "no route yet: the Host is not a Worker's");

  const created = await p.api("POST", routesOf(zone.id), { pattern: `*${zone.name}/*`, script: "rt-app" });
  assert.equal(created.status, 200, JSON.stringify(created.body));
  assert.deepEqual(Object.keys(created.body.result).sort(), ["id", "pattern", "script"]);
  assert.match(created.body.result.id, /^[0-9a-f]{32}$/);
  const api = await p.api("POST", routesOf(zone.id), { pattern: `https://www.${zone.name}/api/*`, script: "rt-api" });
  assert.equal(api.status, 200);
  const off = await p.api("POST", routesOf(zone.id), { pattern: `www.${zone.name}/api/off/*` });
  assert.equal(off.status, 200);
  assert.deepEqual(off.body.result, { id: off.body.result.id, pattern: `www.${zone.name}/api/off/*` }, "a route without a Worker has no script");

  assert.equal((await at(`www.${zone.name}`, "/x?y=1")).text, `app www.${zone.name}/x?y=1`);
  assert.equal((await at(zone.name.toUpperCase(), "/")).text, `app ${zone.name}/`);
  assert.equal((await at(`www.${zone.name}`, "/api/v1")).text, `api www.${zone.name}/api/v1`, "the most specific pattern wins");
  assert.equal((await at(`www.${zone.name}`, "/api/off/x")).status, 404, "Workers are off under a route without a script");

  const list = await p.api("GET", routesOf(zone.id));
  assert.deepEqual(
    list.body.result.map((r: { pattern: string }) => r.pattern),
    [`*${zone.name}/*`, `https://www.${zone.name}/api/*`, `www.${zone.name}/api/off/*`],
  );
  assert.deepEqual((await p.api("GET", `${routesOf(zone.id)}/${api.body.result.id}`)).body.result, api.body.result);

  const changed = await p.api("PUT", `${routesOf(zone.id)}/${api.body.result.id}`, { pattern: `www.${zone.name}/v2/*`, script: "rt-api" });
  assert.equal(changed.status, 200);
  assert.equal((await at(`www.${zone.name}`, "/api/v1")).text, `app www.${zone.name}/api/v1`);
  assert.equal((await at(`www.${zone.name}`, "/v2/x")).text, `api www.${zone.name}/v2/x`);

  assert.equal((await p.api("DELETE", `${routesOf(zone.id)}/${created.body.result.id}`)).status, 200);
  assert.equal((await at(`www.${zone.name}`, "/x")).status, 404);
  assert.equal((await p.api("DELETE", `${routesOf(zone.id)}/${created.body.result.id}`)).status, 404);
  assert.equal((await p.api("GET", `${routesOf(zone.id)}/${"0".repeat(32)}`)).status, 404);
});

test("zone routes: refusals keep the hosted codes and change nothing", async () => {
  const zone = await zoneOf(p.accountId);
  assert.equal((await uploadScript(p, "rt-refused", worker("r"))).status, 200);
  assert.equal((await p.api("POST", routesOf(zone.id), { pattern: `${zone.name}/*`, script: "rt-refused" })).status, 200);
  const cases: [unknown, number, number][] = [
    [{ pattern: `${zone.name}/*`, script: "rt-refused" }, 409, 10020],
    [{ pattern: `other.example/*`, script: "rt-refused" }, 400, 10022],
    [{ pattern: `a.${zone.name}/*`, script: "no-such-worker" }, 400, 10019],
    [{ pattern: `a.${zone.name}/x*y`, script: "rt-refused" }, 400, 10021],
    [{ pattern: `a.${zone.name}`, script: "rt-refused" }, 400, 10021],
    [{ script: "rt-refused" }, 400, 10021],
    [[], 400, 10021],
  ];
  for (const [body, status, code] of cases) {
    const r = await p.api("POST", routesOf(zone.id), body);
    assert.equal(r.status, status, JSON.stringify(body));
    assert.equal(r.body.errors[0].code, code, JSON.stringify(r.body));
  }
  assert.equal((await p.api("GET", routesOf(zone.id))).body.result.length, 1);
  assert.equal((await p.api("GET", routesOf("f".repeat(32)))).status, 404);
});

test("two accounts: B never reads, routes or attaches a hostname of A's zone, nor routes A's zone to its Worker", async () => {
  const zoneA = await zoneOf(p.accountId);
  assert.equal((await uploadScript(p, "rt-a", worker("a"))).status, 200);
  assert.equal((await uploadScript(p, "rt-b", worker("b"), {}, { accountId: accountB, headers: asB })).status, 200);
  const own = await p.api("POST", routesOf(zoneA.id), { pattern: `${zoneA.name}/*`, script: "rt-a" });
  assert.equal(own.status, 200);

  // A's zone, seen by B: as if it did not exist.
  for (const [method, path, body] of [
    ["GET", routesOf(zoneA.id), undefined],
    ["POST", routesOf(zoneA.id), { pattern: `b.${zoneA.name}/*`, script: "rt-b" }],
    ["GET", `${routesOf(zoneA.id)}/${own.body.result.id}`, undefined],
    ["PUT", `${routesOf(zoneA.id)}/${own.body.result.id}`, { pattern: `${zoneA.name}/*`, script: "rt-b" }],
    ["DELETE", `${routesOf(zoneA.id)}/${own.body.result.id}`, undefined],
  ] as const) {
    const r = await p.api(method, path, body, asB);
    assert.equal(r.status, 404, `${method} ${path}: ${JSON.stringify(r.body)}`);
  }
  // Through B's own account: A's zone is not B's, whichever way it is named.
  for (const route of [{ pattern: `b.${zoneA.name}/*`, zone_name: zoneA.name }, { pattern: `b.${zoneA.name}/*`, zone_id: zoneA.id }, `b.${zoneA.name}/*`]) {
    const r = await p.api("PUT", `/accounts/${accountB}/workers/scripts/rt-b/routes`, [route], asB);
    assert.equal(r.status, 400, JSON.stringify(r.body));
  }
  const domain = await p.api("PUT", `/accounts/${accountB}/workers/domains`, { hostname: `b.${zoneA.name}`, service: "rt-b", environment: "production" }, asB);
  assert.equal(domain.status, 400, JSON.stringify(domain.body));
  // A cannot point its zone at B's Worker either (the Worker must be the zone account's).
  const crossed = await p.api("POST", routesOf(zoneA.id), { pattern: `x.${zoneA.name}/*`, script: "rt-b" });
  assert.equal(crossed.body.errors[0].code, 10019);
  // B's calls on A's account are refused by the guard.
  assert.equal((await p.api("GET", `/accounts/${p.accountId}/workers/domains`, undefined, asB)).status, 403);
  assert.equal((await at(zoneA.name, "/")).text, `a ${zoneA.name}/`);
  assert.equal((await at(`b.${zoneA.name}`, "/x")).status, 404);
});

test("a Worker's routes (wrangler's PUT) replace the ones it had; its routes and domains go with it, and with their zone", async () => {
  const zone = await zoneOf(p.accountId);
  assert.equal((await uploadScript(p, "rt-gone", worker("gone"))).status, 200);
  const put = await p.api("PUT", `/accounts/${p.accountId}/workers/scripts/rt-gone/routes`, [
    { pattern: `one.${zone.name}/*`, zone_name: zone.name },
    { pattern: `two.${zone.name}/*`, zone_id: zone.id },
    { pattern: `three.${zone.name}/*` },
  ]);
  assert.equal(put.status, 200, JSON.stringify(put.body));
  const again = await p.api("PUT", `/accounts/${p.accountId}/workers/scripts/rt-gone/routes`, [{ pattern: `two.${zone.name}/*`, zone_name: zone.name }]);
  assert.equal(again.status, 200);
  assert.deepEqual(
    (await p.api("GET", routesOf(zone.id))).body.result.map((r: { pattern: string }) => r.pattern),
    [`two.${zone.name}/*`],
  );
  assert.equal((await at(`one.${zone.name}`, "/x")).status, 404);
  assert.equal((await at(`two.${zone.name}`)).text, `gone two.${zone.name}/`);
  const attached = await p.api("PUT", `/accounts/${p.accountId}/workers/domains`, { hostname: `d.${zone.name}`, service: "rt-gone", zone_id: zone.id });
  assert.equal(attached.status, 200, JSON.stringify(attached.body));

  assert.equal((await p.api("DELETE", `/accounts/${p.accountId}/workers/scripts/rt-gone`)).status, 200);
  assert.deepEqual((await p.api("GET", routesOf(zone.id))).body.result, []);
  assert.deepEqual((await p.api("GET", `/accounts/${p.accountId}/workers/domains?service=rt-gone`)).body.result, []);

  // A deleted zone takes its routes: the name, made again by B, routes nothing of A's.
  assert.equal((await uploadScript(p, "rt-zone", worker("zone"))).status, 200);
  assert.equal((await p.api("POST", routesOf(zone.id), { pattern: `${zone.name}/*`, script: "rt-zone" })).status, 200);
  assert.equal((await at(zone.name)).text, `zone ${zone.name}/`);
  assert.equal((await p.api("DELETE", `/zones/${zone.id}`)).status, 200);
  assert.equal((await at(zone.name, "/x")).status, 404);
  const again2 = await p.api("POST", "/zones", { name: zone.name, account: { id: accountB } }, asB);
  assert.equal(again2.status, 200, JSON.stringify(again2.body));
  assert.deepEqual((await p.api("GET", routesOf(again2.body.result.id), undefined, asB)).body.result, []);
  assert.equal((await at(zone.name, "/x")).status, 404);
});

test("Custom Domains: attached, listed, served for every path ahead of routes, moved only when told, detached (API and SDK)", async () => {
  const zone = await zoneOf(p.accountId);
  assert.equal((await uploadScript(p, "rt-dom", worker("dom"))).status, 200);
  assert.equal((await uploadScript(p, "rt-dom2", worker("dom2"))).status, 200);
  assert.equal((await p.api("POST", routesOf(zone.id), { pattern: `*${zone.name}/*`, script: "rt-dom2" })).status, 200);
  const cf = new Cloudflare({ apiToken: p.token, baseURL: p.apiUrl, maxRetries: 0 });
  const d = await cf.workers.domains.update({ account_id: p.accountId, hostname: `shop.${zone.name}`, service: "rt-dom", zone_id: zone.id });
  assert.equal(d.hostname, `shop.${zone.name}`);
  assert.equal(d.zone_name, zone.name);
  assert.equal((await at(`shop.${zone.name}`, "/any/path")).text, `dom shop.${zone.name}/any/path`);
  assert.equal((await at(`other.${zone.name}`, "/")).text, `dom2 other.${zone.name}/`);
  const listed = [];
  for await (const x of cf.workers.domains.list({ account_id: p.accountId, service: "rt-dom" })) listed.push(x.hostname);
  assert.deepEqual(listed, [`shop.${zone.name}`]);
  assert.equal((await cf.workers.domains.get(d.id!, { account_id: p.accountId })).service, "rt-dom");

  // wrangler's records PUT: moving a hostname another Worker holds needs override_existing_origin.
  const records = `/accounts/${p.accountId}/workers/scripts/rt-dom2/domains/records`;
  const refused = await p.api("PUT", records, { override_scope: true, override_existing_origin: false, origins: [{ hostname: `shop.${zone.name}` }] });
  assert.equal(refused.status, 409, JSON.stringify(refused.body));
  assert.equal((await at(`shop.${zone.name}`)).text, `dom shop.${zone.name}/`);
  const moved = await p.api("PUT", records, { override_scope: true, override_existing_origin: true, origins: [{ hostname: `shop.${zone.name}` }] });
  assert.equal(moved.status, 200);
  assert.equal(moved.body.result[0].id, d.id, "a moved domain keeps its id");
  assert.equal((await at(`shop.${zone.name}`)).text, `dom2 shop.${zone.name}/`);
  for (const bad of [
    { hostname: `*.${zone.name}`, service: "rt-dom" },
    { hostname: `x.${zone.name}/p`, service: "rt-dom" },
    { hostname: "x.elsewhere.example", service: "rt-dom" },
    { hostname: `x.${zone.name}`, service: "rt-dom", environment: "staging" },
  ]) {
    const r = await p.api("PUT", `/accounts/${p.accountId}/workers/domains`, bad);
    assert.equal(r.status, 400, JSON.stringify(bad));
  }
  assert.equal((await p.api("PUT", `/accounts/${p.accountId}/workers/domains`, { hostname: `y.${zone.name}`, service: "nope" })).status, 404);

  await cf.workers.domains.delete(d.id!, { account_id: p.accountId });
  assert.equal((await at(`shop.${zone.name}`)).text, `dom2 shop.${zone.name}/`, "the route serves the hostname again");
  assert.equal((await p.api("GET", `/accounts/${p.accountId}/workers/domains/${d.id}`)).status, 404);
});

test("the SDK's client.workers.routes manages a zone's routes", async () => {
  const zone = await zoneOf(p.accountId);
  assert.equal((await uploadScript(p, "rt-sdk", worker("sdk"))).status, 200);
  const cf = new Cloudflare({ apiToken: p.token, baseURL: p.apiUrl, maxRetries: 0 });
  const created = await cf.workers.routes.create({ zone_id: zone.id, pattern: `sdk.${zone.name}/*`, script: "rt-sdk" });
  assert.equal(created.script, "rt-sdk");
  const all = [];
  for await (const r of cf.workers.routes.list({ zone_id: zone.id })) all.push(r.pattern);
  assert.deepEqual(all, [`sdk.${zone.name}/*`]);
  assert.equal((await at(`sdk.${zone.name}`, "/q")).text, `sdk sdk.${zone.name}/q`);
  const updated = await cf.workers.routes.update(created.id, { zone_id: zone.id, pattern: `sdk2.${zone.name}/*`, script: "rt-sdk" });
  assert.equal(updated.pattern, `sdk2.${zone.name}/*`);
  assert.equal((await cf.workers.routes.get(created.id, { zone_id: zone.id })).pattern, `sdk2.${zone.name}/*`);
  await cf.workers.routes.delete(created.id, { zone_id: zone.id });
  await assert.rejects(cf.workers.routes.get(created.id, { zone_id: zone.id }), { status: 404 });
});
