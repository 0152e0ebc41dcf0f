import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { BlockList } from "node:net";
import { test } from "node:test";
import { Postgres } from "../core/db/postgres.js";
import { newTestCredentials, startTestPlatform, type TestPlatform } from "../core/testing/platform.js";
import { testDatabase } from "../core/testing/services.js";
import { eventually } from "../core/testing/eventually.js";
import { startTcpProxy } from "../core/testing/tcp-proxy.js";
import { startTwoNodesOn } from "../core/testing/two-nodes.js";
import { createAccount, uploadScript } from "../workers/testing/helpers.js";
import { PgDnsStore } from "./pg-store.js";
import { buildRecord } from "./records/input.js";
import { ZoneService } from "./zones/zone-service.js";

const HANG_GUARD = { timeout: 240_000 };

// A node knows a zone made through another node once that node's bus notice is applied here (90-360 ms measured,
// docs/dns.md "Several nodes"). A client behind a load balancer that makes a zone through one node and names it
// through another at once (Terraform's zone, then its records or a Workers Custom Domain) must find it all the same.
// To make "the notice has not arrived" certain rather than likely, the zones here are written into the shared
// database by a zone service of the test's own, which publishes nothing: no node ever hears of them, so every
// answer below comes from the API's catch-up (a read of the store on a miss).
test("on two nodes (PostgreSQL), a zone no notice announced is found at once by every area's API, and only by its account", HANG_GUARD, async (t) => {
  const started = await startTwoNodesOn(t);
  if (!started) return;
  const [, b] = started.nodes;
  const pg = new Postgres({ url: started.databaseUrl, poolSize: 2 });
  t.after(() => pg.close());
  const elsewhere = new ZoneService(new PgDnsStore(pg));
  await elsewhere.load();
  const otherAccount = await createAccount(b, "catch-up-other");

  const name = `caught${randomBytes(4).toString("hex")}.example`;
  const zs = await elsewhere.createZone(b.accountId, name);
  await elsewhere.editRecords(zs, (draft) => [
    buildRecord(elsewhere, draft, { type: "TXT", name: "note", content: "made elsewhere" }, "create", { platform: new BlockList() }),
  ]);
  const zoneId = zs.zone.id;

  // The zone's own routes (the hook before the guard): the zone, its records, the other areas' /zones/{id} routes.
  const got = await b.api("GET", `/zones/${zoneId}`);
  assert.equal(got.status, 200, JSON.stringify(got.body));
  assert.equal(got.body.result.name, name);
  const records = await b.api("GET", `/zones/${zoneId}/dns_records?type=TXT`);
  assert.deepEqual(
    records.body.result.map((r: { content: string }) => r.content),
    ["made elsewhere"],
    "the records came with the zone",
  );

  const second = await elsewhere.createZone(b.accountId, `second-${name}`);
  const made = await b.api("POST", `/zones/${second.zone.id}/dns_records`, { type: "TXT", name: "www", content: "added here" });
  assert.equal(made.status, 200, JSON.stringify(made.body));
  const third = await elsewhere.createZone(b.accountId, `third-${name}`);
  assert.equal((await b.api("GET", `/zones/${third.zone.id}/settings/ssl`)).status, 200, "the edge's zone settings");
  const fourth = await elsewhere.createZone(b.accountId, `fourth-${name}`);
  assert.equal((await b.api("GET", `/zones/${fourth.zone.id}/workers/routes`)).status, 200, "the zone's Workers routes");

  // By name: the zones list (how wrangler finds a route's zone) and a Custom Domain given only its hostname.
  const byName = await elsewhere.createZone(b.accountId, `named-${name}`);
  const listed = await b.api("GET", `/zones?name=named-${name}`);
  assert.deepEqual(
    listed.body.result.map((z: { id: string }) => z.id),
    [byName.zone.id],
  );
  assert.equal((await uploadScript(b, "caught-up", `export default { fetch: () => new Response("caught up") };`)).status, 200);
  const byHost = await elsewhere.createZone(b.accountId, `host-${name}`);
  const attached = await b.api("PUT", `/accounts/${b.accountId}/workers/domains`, { hostname: `shop.host-${name}`, service: "caught-up" });
  assert.equal(attached.status, 200, JSON.stringify(attached.body));
  assert.equal(attached.body.result.zone_id, byHost.zone.id);
  const byPattern = await elsewhere.createZone(b.accountId, `route-${name}`);
  const routed = await b.api("PUT", `/accounts/${b.accountId}/workers/scripts/caught-up/routes`, [{ pattern: `api.route-${name}/*` }]);
  assert.equal(routed.status, 200, JSON.stringify(routed.body));
  assert.equal(routed.body.result[0].zone_id, byPattern.zone.id);

  // Another account's zone, caught up the same way, is still answered as missing: the guard runs after the catch-up.
  const theirs = await elsewhere.createZone(otherAccount, `theirs-${name}`);
  const refused = await b.api("GET", `/zones/${theirs.zone.id}`);
  assert.equal(refused.status, 404, JSON.stringify(refused.body));
  assert.equal(refused.body.errors[0].code, 1001);
  assert.deepEqual((await b.api("GET", `/zones?name=theirs-${name}`)).body.result, []);
  const notAttached = await b.api("PUT", `/accounts/${b.accountId}/workers/domains`, { hostname: `x.theirs-${name}`, service: "caught-up" });
  assert.equal(notAttached.status, 400, JSON.stringify(notAttached.body));
  assert.equal(notAttached.body.errors[0].code, 10083, "no zone of the caller's holds it");
  // And a zone that exists nowhere is missing, as before, also one whose id or name PostgreSQL could not even hold.
  assert.equal((await b.api("GET", `/zones/${"f".repeat(32)}`)).status, 404);
  assert.equal((await b.api("GET", "/zones/%00")).status, 404);
  for (const body of [
    { hostname: "x\u0000.example", service: "caught-up" },
    { hostname: `x.${name}`, zone_name: "a\u0000.example", service: "caught-up" },
    { hostname: `x.${name}`, zone_id: "\u0000", service: "caught-up" },
  ]) {
    const refusedNul = await b.api("PUT", `/accounts/${b.accountId}/workers/domains`, body);
    assert.equal(refusedNul.status < 500, true, JSON.stringify(refusedNul.body));
  }
});

// The usual case, with notices: a client writes through node a and reads through node b at once. Node b reaches
// PostgreSQL through a proxy that delays everything PostgreSQL sends it by LAG_MS, its notices included, so a read
// answered from b's memory alone would be stale every time; b's API answers once the notices committed before the
// request are applied (the bus's barrier), so every read below sees the write before it.
const LAG_MS = 150;

test(
  "on two nodes (PostgreSQL), a client reads its own writes through the other node at once: zones, records, settings, Cache Rules",
  HANG_GUARD,
  async (t) => {
    const db = await testDatabase(t);
    if (!db) return;
    const proxy = await startTcpProxy(db.url.replace(/^postgres(ql)?:/, "http:"));
    t.after(() => proxy.close());
    const throughProxy = new URL(db.url);
    throughProxy.host = `127.0.0.1:${proxy.port}`;
    const credentials = newTestCredentials();
    const env = { EDGE_SECRETS_KEY: randomBytes(32).toString("base64") };
    const nodes: TestPlatform[] = [];
    t.after(() => Promise.all(nodes.map((n) => n.dispose())));
    nodes.push(await startTestPlatform({ args: ["--database-url", db.url], env, credentials }));
    nodes.push(await startTestPlatform({ args: ["--database-url", throughProxy.toString()], env, credentials }));
    const [a, b] = nodes as [TestPlatform, TestPlatform];
    // Before the lag: node b loads its Cache Rules expression compiler once (a rules reload's first), so no read
    // below waits for that on top of the notices.
    const warm = await a.api("POST", "/zones", { name: `warm-${randomBytes(4).toString("hex")}.example`, account: { id: a.accountId } });
    const warmRules = `/zones/${warm.body.result.id}/rulesets/phases/http_request_cache_settings/entrypoint`;
    const warmRule = { expression: 'http.request.uri.path eq "/"', action: "set_cache_settings", action_parameters: { cache: true } };
    assert.equal((await a.api("PUT", warmRules, { rules: [warmRule] })).status, 200);
    await eventually(async () => (await b.api("GET", warmRules)).status === 200, "node b has read the warm-up rules", 60_000);
    proxy.lag(LAG_MS);

    const name = `rw${randomBytes(4).toString("hex")}.example`;
    const made = await a.api("POST", "/zones", { name, account: { id: a.accountId } });
    assert.equal(made.status, 200, JSON.stringify(made.body));
    const zoneId = made.body.result.id as string;
    const listed = await b.api("GET", `/zones?name=${name}`);
    assert.equal(listed.status, 200, JSON.stringify(listed.body));
    assert.deepEqual(
      listed.body.result.map((z: { id: string }) => z.id),
      [zoneId],
      "the zone, listed",
    );
    const all = await b.api("GET", "/zones?per_page=50");
    assert.ok(
      all.body.result.some((z: { id: string }) => z.id === zoneId),
      "the zone, in the whole list",
    );

    const record = await a.api("POST", `/zones/${zoneId}/dns_records`, { type: "TXT", name: "rw", content: "first" });
    assert.equal(record.status, 200, JSON.stringify(record.body));
    const recordId = record.body.result.id as string;
    assert.equal((await b.api("GET", `/zones/${zoneId}/dns_records/${recordId}`)).body.result?.content, "first", "the new record");
    assert.equal((await a.api("PATCH", `/zones/${zoneId}/dns_records/${recordId}`, { content: "second" })).status, 200);
    assert.equal((await b.api("GET", `/zones/${zoneId}/dns_records/${recordId}`)).body.result?.content, "second", "the changed record");
    assert.equal((await a.api("DELETE", `/zones/${zoneId}/dns_records/${recordId}`)).status, 200);
    assert.equal((await b.api("GET", `/zones/${zoneId}/dns_records/${recordId}`)).status, 404, "the deleted record");

    for (const value of [7200, 14400]) {
      assert.equal((await a.api("PATCH", `/zones/${zoneId}/settings/browser_cache_ttl`, { value })).status, 200);
      assert.equal((await b.api("GET", `/zones/${zoneId}/settings/browser_cache_ttl`)).body.result?.value, value, "the zone setting");
    }

    const entrypoint = `/zones/${zoneId}/rulesets/phases/http_request_cache_settings/entrypoint`;
    for (const description of ["first rule", "second rule"]) {
      const rule = { expression: 'http.request.uri.path.extension eq "html"', action: "set_cache_settings", action_parameters: { cache: true }, description };
      assert.equal((await a.api("PUT", entrypoint, { rules: [rule] })).status, 200);
      assert.equal((await b.api("GET", entrypoint)).body.result?.rules?.[0]?.description, description, "the Cache Rule");
    }

    assert.equal((await a.api("DELETE", `/zones/${zoneId}`)).status, 200);
    assert.equal((await b.api("GET", `/zones/${zoneId}`)).status, 404, "the deleted zone");
    // Every read waited for its notices: none gave up at the bound and answered from memory.
    assert.doesNotMatch(b.logs(), /waited their longest/);
  },
);
