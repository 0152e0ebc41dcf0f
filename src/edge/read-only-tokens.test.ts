import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { startTestPlatform, type TestPlatform } from "../core/testing/platform.js";
import { createAccount } from "../workers/testing/helpers.js";

/**
 * A token holding every read group of its account, and no edit one, calls the newest surface's writes (zone
 * settings, purge, Cache Rules, custom certificates, D1 queries, Queues): each is refused and changes nothing. And
 * another account's token, holding every edit group of its own account, gets 404s on the first account's zone.
 */
let p: TestPlatform;
let zoneId = "";
let databaseId = "";
let reader: Record<string, string> = {};
let other: Record<string, string> = {};
const READS = ["dns_read", "zone_settings_read", "cache_rules_read", "ssl_and_certificates_read", "d1_read", "queues_read", "workers_read", "analytics_read"];
const EDITS = ["dns_edit", "zone_settings_edit", "cache_rules_edit", "ssl_and_certificates_edit", "cache_purge", "d1_edit", "queues_edit", "workers_edit"];

const tokenFor = async (permissions: string[], accountId: string) => {
  const r = await p.api("POST", "/user/tokens", { name: "t", permissions, account_id: accountId }, p.keyHeaders());
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return { authorization: `Bearer ${r.body.result.value}` };
};

before(async () => {
  p = await startTestPlatform({ args: ["--dns-port", "0", "--edge-tls-port", "0", "--acme-directory", "https://127.0.0.1:9/directory"] });
  const zone = await p.api("POST", "/zones", { name: "readers.example", account: { id: p.accountId } });
  assert.equal(zone.status, 200, JSON.stringify(zone.body));
  zoneId = zone.body.result.id;
  const db = await p.api("POST", `/accounts/${p.accountId}/d1/database`, { name: "readers-db" });
  assert.equal(db.status, 200, JSON.stringify(db.body));
  databaseId = db.body.result.uuid;
  reader = await tokenFor(READS, p.accountId);
  const accountB = await createAccount(p, "readers-b");
  other = await tokenFor(EDITS, accountB);
});
after(() => p?.dispose());

const writes = () =>
  [
    ["PATCH", `/zones/${zoneId}/settings/ssl`, { value: "off" }],
    ["PATCH", `/zones/${zoneId}/settings`, { items: [{ id: "ssl", value: "off" }] }],
    ["POST", `/zones/${zoneId}/purge_cache`, { purge_everything: true }],
    ["PUT", `/zones/${zoneId}/rulesets/phases/http_request_cache_settings/entrypoint`, { rules: [] }],
    ["POST", `/zones/${zoneId}/custom_certificates`, { certificate: "x", private_key: "y" }],
    ["POST", `/accounts/${p.accountId}/d1/database/${databaseId}/query`, { sql: "CREATE TABLE t (x)" }],
    ["POST", `/accounts/${p.accountId}/queues`, { queue_name: "readers-q" }],
  ] as const;

test("a token of read groups only is refused every write of the newest surface, and nothing changes", async () => {
  const before = (await p.api("GET", `/zones/${zoneId}/settings/ssl`)).body.result.value;
  for (const [method, path, body] of writes()) {
    const r = await p.api(method, path, body, reader);
    assert.equal(r.status, 403, `${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
    assert.equal(r.body.success, false);
  }
  assert.equal((await p.api("GET", `/zones/${zoneId}/settings/ssl`)).body.result.value, before);
  const tables = await p.api("POST", `/accounts/${p.accountId}/d1/database/${databaseId}/query`, { sql: "SELECT name FROM sqlite_master WHERE name = 't'" });
  assert.deepEqual(tables.body.result[0].results, []);
  assert.equal((await p.api("GET", `/accounts/${p.accountId}/queues`)).body.result.length, 0);
  // Its reads work.
  assert.equal((await p.api("GET", `/zones/${zoneId}/settings`, undefined, reader)).status, 200);
});

test("another account's token with every edit group of its own gets 404 or 403 on this account's zone and database", async () => {
  for (const [method, path, body] of writes()) {
    const r = await p.api(method, path, body, other);
    assert.ok(r.status === 404 || r.status === 403, `${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
  }
  assert.equal((await p.api("GET", `/zones/${zoneId}/settings`, undefined, other)).status, 404);
});
