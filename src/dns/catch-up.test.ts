import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";
import { Postgres } from "../core/db/postgres.js";
import { startTwoNodesOn } from "../core/testing/two-nodes.js";
import { createAccount, uploadScript } from "../workers/testing/helpers.js";
import { PgDnsStore } from "./pg-store.js";
import { buildRecord } from "./records/input.js";
import { ZoneService } from "./zones/zone-service.js";
import { BlockList } from "node:net";

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
  // And a zone that exists nowhere is missing, as before.
  assert.equal((await b.api("GET", `/zones/${"f".repeat(32)}`)).status, 404);
});
