import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { after, before, test } from "node:test";
import { request } from "undici";
import { startTestPlatform, type TestPlatform } from "../../core/testing/platform.js";
import { createAccount, uploadScript } from "../../workers/testing/helpers.js";

/**
 * Nothing of a tenant at or under a platform hostname (issue 30, hole 1): zones, records, Custom Domains and routes
 * are refused with a 400 naming the platform's name, with two accounts; a plan the operator changes later holds
 * against what tenants made before.
 */
let p: TestPlatform;
let accountB: string;
let asB: Record<string, string>;
const corp = `corp${randomBytes(3).toString("hex")}.example`;
const args = ["--dns-port", "0"];

async function start(extra: string[] = [], again?: TestPlatform) {
  return startTestPlatform({ args: [...args, ...extra], ...(again && { stateDir: again.stateDir, credentials: again }) });
}

before(async () => {
  p = await start(["--api-hostname", "api.edge.internal", "--dashboard-hostname", "dash.edge.internal"]);
  accountB = await createAccount(p, "reserve-b");
  const token = await p.api("POST", "/user/tokens", { name: "b", permissions: ["dns_edit", "workers_edit"], account_id: accountB }, p.keyHeaders());
  assert.equal(token.status, 200, JSON.stringify(token.body));
  asB = { authorization: `Bearer ${token.body.result.value}` };
});
after(async () => {
  await p?.dispose();
  // The restarted platform was given the first one's state directory: dispose leaves a given one in place.
  rmSync(p.stateDir, { recursive: true, force: true });
});

const createZone = (name: string) => p.api("POST", "/zones", { name, account: { id: accountB } }, asB);

test("B cannot create a zone at, under or above the S3 host, the workers domain, the name servers' domain, the API's or the dashboard's hostname", async () => {
  const refused: [string, RegExp][] = [
    ["r2.localhost", /it is r2\.localhost, the platform's own S3 API hostname/],
    [`${"0".repeat(32)}.r2.localhost`, /under r2\.localhost/],
    ["workers.localhost", /workers domain/],
    ["edge-platform.test", /name servers'/],
    ["ns1.edge-platform.test", /under edge-platform\.test|it is edge-platform/],
    ["api.edge.internal", /API hostname/],
    ["edge.internal", /above (api|dash)\.edge\.internal/],
    ["dash.edge.internal", /dashboard hostname/],
  ];
  for (const [name, reason] of refused) {
    const r = await createZone(name);
    assert.equal(r.status, 400, `${name}: ${JSON.stringify(r.body)}`);
    assert.equal(r.body.success, false);
    assert.equal(r.body.errors[0].code, 1099);
    assert.match(r.body.errors[0].message, reason, name);
  }
  assert.equal((await p.api("GET", "/zones?per_page=50", undefined, asB)).body.result.length, 0, "nothing was created");
  assert.equal((await createZone(`ok${randomBytes(3).toString("hex")}.example`)).status, 200);
});

test("the dashboard on its own hostname: served there with the API it calls, not on the API's hostname; the API's hostname is the API's", async () => {
  const port = new URL(p.url).port;
  const at = async (host: string, path: string, headers: Record<string, string> = {}) => {
    const res = await request(`http://127.0.0.1:${port}${path}`, { headers: { host, ...headers } });
    return { status: res.statusCode, text: await res.body.text() };
  };
  assert.match((await at("dash.edge.internal", "/dash/")).text, /app\.js/);
  assert.equal((await at("dash.edge.internal", "/client/v4/user/tokens/verify", { authorization: `Bearer ${p.token}` })).status, 200);
  const elsewhere = await at("api.edge.internal", "/dash/");
  assert.equal(elsewhere.status, 404);
  assert.match(elsewhere.text, /dash\.edge\.internal\/dash\//);
  assert.equal((await at("api.edge.internal", "/client/v4/user/tokens/verify", { authorization: `Bearer ${p.token}` })).status, 200);
});

test("a plan changed later holds against what B made before: no record, Custom Domain or route at the new platform name, and the edge serves it as the platform's", async () => {
  const zone = await createZone(corp);
  assert.equal(zone.status, 200, JSON.stringify(zone.body));
  const zoneId = zone.body.result.id;
  assert.equal(
    (await uploadScript(p, "reserve-b-app", `export default { fetch: () => new Response("B's Worker") };`, {}, { accountId: accountB, headers: asB })).status,
    200,
  );
  // The operator now reaches the API at api.<corp> (B's zone, made before).
  await p.stop();
  p = await start(["--api-hostname", `api.${corp}`], p);
  const record = await p.api("POST", `/zones/${zoneId}/dns_records`, { type: "A", name: `api.${corp}`, content: "203.0.113.66" }, asB);
  assert.equal(record.status, 400, JSON.stringify(record.body));
  assert.match(
    record.body.errors[0].message,
    new RegExp(`api\\.${corp.replace(".", "\\.")} cannot be used for a DNS record: it is api\\.${corp.replace(".", "\\.")}, the platform's own API hostname`),
  );
  const under = await p.api("POST", `/zones/${zoneId}/dns_records`, { type: "TXT", name: `x.api.${corp}`, content: "v" }, asB);
  assert.equal(under.status, 400);
  const domain = await p.api(
    "PUT",
    `/accounts/${accountB}/workers/domains`,
    { hostname: `api.${corp}`, service: "reserve-b-app", environment: "production" },
    asB,
  );
  assert.equal(domain.status, 400, JSON.stringify(domain.body));
  assert.match(domain.body.errors[0].message, /Custom Domain: it is api\./);
  const route = await p.api("POST", `/zones/${zoneId}/workers/routes`, { pattern: `api.${corp}/*`, script: "reserve-b-app" }, asB);
  assert.equal(route.status, 400, JSON.stringify(route.body));
  const wrangler = await p.api("PUT", `/accounts/${accountB}/workers/scripts/reserve-b-app/routes`, [{ pattern: `x.api.${corp}/*` }], asB);
  assert.equal(wrangler.status, 400, JSON.stringify(wrangler.body));
  // B's own names beside it still work.
  assert.equal((await p.api("POST", `/zones/${zoneId}/workers/routes`, { pattern: `www.${corp}/*`, script: "reserve-b-app" }, asB)).status, 200);
  assert.equal(
    (await p.api("POST", `/zones/${zoneId}/dns_records`, { type: "A", name: `www.${corp}`, content: "203.0.113.7", proxied: true }, asB)).status,
    200,
  );
  const port = new URL(p.url).port;
  const www = await request(`http://127.0.0.1:${port}/`, { headers: { host: `www.${corp}` } });
  assert.equal(await www.body.text(), "B's Worker");
  const api = await request(`http://127.0.0.1:${port}/client/v4/user/tokens/verify`, { headers: { host: `api.${corp}`, authorization: `Bearer ${p.token}` } });
  assert.equal(api.statusCode, 200, "the API's hostname reaches the API although B's zone encloses it");
  await api.body.text();
});
