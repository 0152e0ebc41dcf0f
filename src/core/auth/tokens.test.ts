import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startTestPlatform, type TestPlatform } from "../testing/platform.js";

let p: TestPlatform;
before(async () => {
  // A small configured body limit: the 413 test then fits its body in one socket write.
  p = await startTestPlatform({ args: ["--body-limit", "4096"] });
});
after(async () => {
  await p?.dispose();
});

const asToken = (token: string) => ({ authorization: `Bearer ${token}` });

test("a token's value appears only in the create response", async () => {
  const created = await p.api("POST", "/user/tokens", { name: "ci", permissions: ["dns_read"], account_id: p.accountId });
  assert.equal(created.status, 200);
  const { id, value } = created.body.result;
  assert.match(value, /^[A-Za-z0-9]{40}$/);
  const got = await p.api("GET", `/user/tokens/${id}`);
  assert.equal(got.body.result.value, undefined);
  assert.equal(got.body.result.policies[0].permission_groups[0].id, "dns_read");
  const list = await p.api("GET", "/user/tokens");
  assert.ok(list.body.result.some((t: { id: string }) => t.id === id));
  assert.ok(!JSON.stringify(list.body).includes(value));
  assert.equal(list.body.result_info.page, 1);
});

test("the hosted policies shape creates an account-scoped token", async () => {
  const r = await p.api("POST", "/user/tokens", {
    name: "policies",
    policies: [{ effect: "allow", resources: { [`com.cloudflare.api.account.${p.accountId}`]: "*" }, permission_groups: [{ id: "kv_edit" }] }],
  });
  assert.equal(r.status, 200);
  const verify = await p.api("GET", "/user/tokens/verify", undefined, asToken(r.body.result.value));
  assert.equal(verify.body.success, true);
});

test("a token without a permission is refused with 403", async () => {
  const r = await p.api("POST", "/user/tokens", { name: "read only", permissions: ["dns_read"], account_id: p.accountId });
  const h = asToken(r.body.result.value);
  const mint = await p.api("POST", "/user/tokens", { name: "x", permissions: ["dns_read"] }, h);
  assert.equal(mint.status, 403);
  assert.equal(mint.body.errors[0].code, 10000);
});

test("a token cannot grant more than it holds", async () => {
  const r = await p.api("POST", "/user/tokens", { name: "token admin", permissions: ["api_tokens_edit", "dns_read"], account_id: p.accountId });
  const h = asToken(r.body.result.value);
  const ok = await p.api("POST", "/user/tokens", { name: "narrower", permissions: ["dns_read"], account_id: p.accountId }, h);
  assert.equal(ok.status, 200);
  const escalate = await p.api("POST", "/user/tokens", { name: "wider", permissions: ["dns_edit"], account_id: p.accountId }, h);
  assert.equal(escalate.status, 400);
  assert.equal(escalate.body.errors[0].code, 1001);
  assert.match(escalate.body.errors[0].message, /^Failed common permission check against resources\. \(Permission group: "DNS Edit"/);
});

test("a revoked token stops working at once", async () => {
  const r = await p.api("POST", "/user/tokens", { name: "short lived", permissions: ["dns_read"], account_id: p.accountId });
  const h = asToken(r.body.result.value);
  assert.equal((await p.api("GET", "/user/tokens/verify", undefined, h)).status, 200);
  const del = await p.api("DELETE", `/user/tokens/${r.body.result.id}`);
  assert.deepEqual(del.body.result, { id: r.body.result.id });
  const after = await p.api("GET", "/user/tokens/verify", undefined, h);
  assert.equal(after.status, 403);
  assert.equal(after.body.errors[0].code, 10000);
});

test("an expired token is refused", async () => {
  const r = await p.api("POST", "/user/tokens", { name: "expired", permissions: ["dns_read"], account_id: p.accountId, expires_on: "2001-01-01T00:00:00Z" });
  assert.equal(r.status, 200);
  const res = await p.api("GET", "/user", undefined, asToken(r.body.result.value));
  assert.equal(res.status, 403);
});

test("another account's resources are out of a scoped token's reach", async () => {
  const other = await p.api("POST", "/accounts", { name: "Second account" }, p.keyHeaders());
  assert.equal(other.body.success, true);
  const otherId = other.body.result.id;
  // The bootstrap token reaches only the account it was made for; the global key reaches the new one.
  const refused = await p.api("POST", "/user/tokens", { name: "other only", permissions: ["dns_read"], account_id: otherId });
  assert.equal(refused.status, 400);
  const scoped = await p.api("POST", "/user/tokens", { name: "other only", permissions: ["dns_read"], account_id: otherId }, p.keyHeaders());
  const h = asToken(scoped.body.result.value);
  const mine = await p.api("GET", `/accounts/${p.accountId}`, undefined, h);
  assert.equal(mine.status, 403);
  const theirs = await p.api("GET", `/accounts/${otherId}`, undefined, h);
  assert.equal(theirs.status, 200);
  const list = await p.api("GET", "/accounts", undefined, h);
  assert.deepEqual(
    list.body.result.map((a: { id: string }) => a.id),
    [otherId],
  );
  // The global key sees both, in pages that agree with result_info.
  const page1 = await p.api("GET", "/accounts?per_page=1&page=1", undefined, p.keyHeaders());
  assert.equal(page1.body.result_info.total_count, 2);
  assert.equal(page1.body.result_info.total_pages, 2);
  const past = await p.api("GET", "/accounts?per_page=1&page=3", undefined, p.keyHeaders());
  assert.equal(past.status, 200);
  assert.deepEqual(past.body.result, []);
});

test("memberships and user answer what wrangler asks first", async () => {
  const m = await p.api("GET", "/memberships");
  assert.ok(m.body.result.some((x: { account: { id: string } }) => x.account.id === p.accountId));
  const u = await p.api("GET", "/user");
  assert.equal(u.body.result.email, p.email);
});

test("a membership's roles describe what the caller really holds there", async () => {
  const roles = async (headers?: Record<string, string>) =>
    (await p.api("GET", "/memberships", undefined, headers)).body.result.find((x: { account: { id: string } }) => x.account.id === p.accountId)?.roles;
  assert.deepEqual(await roles(), ["Administrator"]);
  const mint = async (groups: string[]) => {
    const r = await p.api("POST", "/user/tokens", {
      name: groups.join("+").slice(0, 120),
      policies: [{ effect: "allow", resources: { [`com.cloudflare.api.account.${p.accountId}`]: "*" }, permission_groups: groups.map((id) => ({ id })) }],
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return { authorization: `Bearer ${r.body.result.value}` };
  };
  const reads = [
    "dns_read",
    "kv_read",
    "r2_read",
    "workers_read",
    "ai_gateway_read",
    "d1_read",
    "queues_read",
    "zone_settings_read",
    "cache_rules_read",
    "ssl_and_certificates_read",
    "account_settings_read",
    "analytics_read",
  ];
  assert.deepEqual(await roles(await mint(reads)), ["Administrator Read Only"]);
  assert.deepEqual(await roles(await mint(["dns_edit"])), ["DNS Read", "DNS Edit"]);
});

test("unknown routes, bad JSON and oversized bodies get envelopes", async () => {
  const nr = await p.api("GET", "/no/such/route");
  assert.equal(nr.status, 404);
  assert.deepEqual(
    nr.body.errors.map((e: { code: number }) => e.code),
    [7003, 7000],
  );
  const bad = await fetch(`${p.apiUrl}/user/tokens`, { method: "POST", headers: p.headers({ "content-type": "application/json" }), body: "{oops" });
  assert.equal(bad.status, 400);
  assert.equal(((await bad.json()) as any).errors[0].code, 6007);
  const big = await fetch(`${p.apiUrl}/user/tokens`, {
    method: "POST",
    headers: p.headers({ "content-type": "application/json" }),
    body: JSON.stringify({ name: "x".repeat(8192) }),
  });
  assert.equal(big.status, 413);
  assert.equal(((await big.json()) as any).success, false);
  const invalid = await p.api("POST", "/user/tokens", { name: "" });
  assert.equal(invalid.status, 400);
  assert.match(invalid.body.errors[0].message, /^name: /);
});

test("no credential reaches the log output", async () => {
  await p.api("GET", "/user");
  await fetch(`${p.apiUrl}/user`, { headers: { "x-auth-email": p.email, "x-auth-key": p.apiKey } });
  await new Promise((r) => setTimeout(r, 200));
  const logs = p.logs();
  assert.ok(logs.includes('"platform ready"'));
  assert.ok(logs.includes("/client/v4/user"), "requests are logged");
  assert.ok(!logs.includes(p.token), "token leaked into logs");
  assert.ok(!logs.includes(p.apiKey), "global key leaked into logs");
  for (const line of logs.trim().split("\n")) {
    const entry = JSON.parse(line);
    if (entry.req) assert.ok(entry.reqId, `request log line without request id: ${line}`);
  }
});
