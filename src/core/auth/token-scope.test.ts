import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import Cloudflare from "cloudflare";
import { startTestPlatform, type TestPlatform } from "../testing/platform.js";
import { addMembership, addUser, type TestUser } from "./testing/identities.js";

// Two accounts, A (the bootstrap account) and B: the bootstrap user U is a member of both, user V of B only,
// user W of A only. Each test mints what it needs with U's global key and then acts as a narrower credential.
let p: TestPlatform;
let A: string;
let B: string;
let V: TestUser;
let W: TestUser;
let key: Record<string, string>;
const bResources = { zone: "", namespace: "", bucket: "b-bucket" };

const bearer = (value: string) => ({ authorization: `Bearer ${value}` });
const accountOf = (policy: { resources: Record<string, string> }) => Object.keys(policy.resources).map((r) => r.replace("com.cloudflare.api.account.", ""));

async function mint(
  body: object,
  headers: Record<string, string> = key,
): Promise<{ id: string; value: string; policies: { resources: Record<string, string> }[] }> {
  const r = await p.api("POST", "/user/tokens", { name: "t", ...body }, headers);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.result;
}

/** The accounts a token's stored policies name, sorted. */
const reach = (t: { policies: { resources: Record<string, string> }[] }) => [...new Set(t.policies.flatMap(accountOf))].sort();

/** What a credential can read of account B's zone, KV value and R2 object (status codes). */
async function readsOfB(headers: Record<string, string>) {
  const zone = await p.api("GET", `/zones/${bResources.zone}`, undefined, headers);
  const zones = await p.api("GET", "/zones", undefined, headers);
  const kv = await fetch(`${p.apiUrl}/accounts/${B}/storage/kv/namespaces/${bResources.namespace}/values/secret`, { headers: p.headers(headers) });
  const r2 = await fetch(`${p.apiUrl}/accounts/${B}/r2/buckets/${bResources.bucket}/objects/secret.txt`, { headers: p.headers(headers) });
  const zoneIds = zones.status === 200 ? (zones.body.result as { id: string }[]).map((z) => z.id) : [];
  return { zone: zone.status, zoneListed: zoneIds.includes(bResources.zone), kv: kv.status, r2: r2.status };
}

before(async () => {
  p = await startTestPlatform();
  A = p.accountId;
  key = p.keyHeaders();
  const made = await p.api("POST", "/accounts", { name: "Account B" }, key);
  assert.equal(made.status, 200);
  B = made.body.result.id;
  V = await addUser(p.stateDir, [B]);
  W = await addUser(p.stateDir, [A]);
  // Something to read in each account: a zone, a KV value and an R2 object.
  for (const [acc, suffix] of [
    [A, "a"],
    [B, "b"],
  ] as const) {
    const zone = await p.api("POST", "/zones", { name: `scope-${suffix}.example`, account: { id: acc } }, key);
    assert.equal(zone.status, 200, JSON.stringify(zone.body));
    const ns = await p.api("POST", `/accounts/${acc}/storage/kv/namespaces`, { title: `ns-${suffix}` }, key);
    assert.equal(ns.status, 200);
    const put = await fetch(`${p.apiUrl}/accounts/${acc}/storage/kv/namespaces/${ns.body.result.id}/values/secret`, {
      method: "PUT",
      headers: key,
      body: `kv of ${suffix}`,
    });
    assert.equal(put.status, 200);
    assert.equal((await p.api("POST", `/accounts/${acc}/r2/buckets`, { name: `${suffix}-bucket` }, key)).status, 200);
    const obj = await fetch(`${p.apiUrl}/accounts/${acc}/r2/buckets/${suffix}-bucket/objects/secret.txt`, {
      method: "PUT",
      headers: key,
      body: `r2 of ${suffix}`,
    });
    assert.equal(obj.status, 200);
    if (acc === B) Object.assign(bResources, { zone: zone.body.result.id, namespace: ns.body.result.id });
  }
});
after(async () => {
  await p?.dispose();
});

/** A token that manages tokens on account A only, and reads A's zones, KV and R2. */
const tokenAdminOfA = () => mint({ permissions: ["api_tokens_edit", "dns_read", "kv_read", "r2_read"], account_id: A });

test("the global key reads B, and a token it mints with `*` is resolved to A and B and keeps working", async () => {
  assert.deepEqual(await readsOfB(key), { zone: 200, zoneListed: true, kv: 200, r2: 200 });
  const all = await mint({
    policies: [
      { effect: "allow", resources: { "com.cloudflare.api.account.*": "*" }, permission_groups: [{ id: "dns_read" }, { id: "kv_read" }, { id: "r2_read" }] },
    ],
  });
  assert.deepEqual(reach(all), [A, B].sort());
  assert.deepEqual(await readsOfB(bearer(all.value)), { zone: 200, zoneListed: true, kv: 200, r2: 200 });
});

test("a token holding api_tokens_edit on A only cannot create a token naming B (400, 1001, naming the grant)", async () => {
  const admin = await tokenAdminOfA();
  const asAdmin = bearer(admin.value);
  const short = await p.api("POST", "/user/tokens", { name: "b", permissions: ["dns_read"], account_id: B }, asAdmin);
  assert.equal(short.status, 400);
  assert.equal(short.body.success, false);
  assert.equal(short.body.errors[0].code, 1001);
  assert.match(short.body.errors[0].message, /Permission group: "DNS Read"/);
  assert.ok(short.body.errors[0].message.includes(`com.cloudflare.api.account.${B}`));
  const policies = await p.api(
    "POST",
    "/user/tokens",
    {
      name: "b",
      policies: [
        {
          effect: "allow",
          resources: { [`com.cloudflare.api.account.${A}`]: "*", [`com.cloudflare.api.account.${B}`]: "*" },
          permission_groups: [{ id: "kv_read" }],
        },
      ],
    },
    asAdmin,
  );
  assert.equal(policies.status, 400);
  assert.equal(policies.body.errors[0].code, 1001);
  // A permission it does not hold anywhere is refused even with `*`, and nothing was stored by any refusal.
  const wider = await p.api("POST", "/user/tokens", { name: "w", permissions: ["dns_edit"] }, asAdmin);
  assert.equal(wider.status, 400);
  assert.match(wider.body.errors[0].message, /Permission group: "DNS Edit", resource: com\.cloudflare\.api\.account\.\*/);
  const names = (await p.api("GET", "/user/tokens?per_page=50", undefined, key)).body.result.map((t: { name: string }) => t.name);
  assert.ok(!names.includes("b") && !names.includes("w"));
});

test("`*`, com.cloudflare.api.account.* and missing resources from an A-only token resolve to A and never read B", async () => {
  const asAdmin = bearer((await tokenAdminOfA()).value);
  const perms = ["dns_read", "kv_read", "r2_read"];
  const groups = perms.map((id) => ({ id }));
  const minted = [
    await mint({ permissions: perms }, asAdmin),
    await mint({ policies: [{ effect: "allow", resources: { "com.cloudflare.api.account.*": "*" }, permission_groups: groups }] }, asAdmin),
    await mint({ policies: [{ effect: "allow", permission_groups: groups }] }, asAdmin),
    await mint({ policies: [{ effect: "allow", resources: {}, permission_groups: groups }] }, asAdmin),
  ];
  for (const t of minted) {
    assert.deepEqual(reach(t), [A], "stored as the concrete account A");
    assert.deepEqual(await readsOfB(bearer(t.value)), { zone: 404, zoneListed: false, kv: 403, r2: 403 });
    // ...while A's own resources stay readable: the token works, it just does not reach B.
    const kvA = await p.api("GET", `/accounts/${A}/storage/kv/namespaces`, undefined, bearer(t.value));
    assert.equal(kvA.status, 200);
    assert.equal(kvA.body.result.length, 1);
  }
});

test("an account joined later does not widen an existing token; the global key reaches it", async () => {
  const before = await mint({ permissions: ["dns_read"] });
  const c = await p.api("POST", "/accounts", { name: "Account C" }, key);
  const C = c.body.result.id as string;
  assert.equal((await p.api("GET", `/accounts/${C}`, undefined, key)).status, 200);
  assert.equal((await p.api("GET", `/accounts/${C}`, undefined, bearer(before.value))).status, 403);
  assert.equal((await p.api("GET", `/accounts/${C}`)).status, 403, "nor the bootstrap token");
  assert.deepEqual(reach((await p.api("GET", `/user/tokens/${before.id}`, undefined, key)).body.result), [A, B].sort());

  // W, a user of A only, mints `*`, then joins B: the key follows, the token does not.
  const wToken = await mint({ permissions: ["kv_read"] }, W.headers);
  assert.deepEqual(reach(wToken), [A]);
  await addMembership(p.stateDir, W.userId, B);
  await mint({ permissions: ["kv_read"], account_id: A }, W.headers); // an identity change through the API: caches are dropped
  assert.equal((await p.api("GET", `/accounts/${B}`, undefined, W.headers)).status, 200);
  assert.equal((await p.api("GET", `/accounts/${B}/storage/kv/namespaces`, undefined, bearer(wToken.value))).status, 403);
});

test("users on one account only: V (B) and W (A) cannot mint for the other account, and see none of U's tokens", async () => {
  const vStar = await mint({ permissions: ["dns_read"] }, V.headers);
  assert.deepEqual(reach(vStar), [B]);
  const vOnA = await p.api("POST", "/user/tokens", { name: "x", permissions: ["dns_read"], account_id: A }, V.headers);
  assert.equal(vOnA.status, 400);
  assert.equal(vOnA.body.errors[0].code, 1001);
  const uToken = await mint({ permissions: ["dns_read"], account_id: B });
  const vList = (await p.api("GET", "/user/tokens", undefined, V.headers)).body.result.map((t: { id: string }) => t.id);
  assert.deepEqual(vList, [vStar.id]);
  for (const [method, path] of [
    ["GET", `/user/tokens/${uToken.id}`],
    ["PUT", `/user/tokens/${uToken.id}/value`],
    ["DELETE", `/user/tokens/${uToken.id}`],
  ]) {
    const r = await p.api(method, path, method === "PUT" ? {} : undefined, V.headers);
    assert.equal(r.status, 404, `${method} ${path}`);
    assert.equal(r.body.errors[0].code, 1003);
  }
});

test("/user/tokens: an A-only token neither lists, reads, updates, rolls nor revokes tokens reaching B (404, 1003)", async () => {
  const asAdmin = bearer((await tokenAdminOfA()).value);
  const bOnly = await mint({ permissions: ["dns_read"], account_id: B });
  const both = await mint({
    policies: [
      {
        effect: "allow",
        resources: { [`com.cloudflare.api.account.${A}`]: "*", [`com.cloudflare.api.account.${B}`]: "*" },
        permission_groups: [{ id: "dns_read" }],
      },
    ],
  });
  const aOnly = await mint({ permissions: ["dns_read"], account_id: A });

  const listed: string[] = [];
  for (let page = 1; ; page++) {
    const r = await p.api("GET", `/user/tokens?per_page=5&page=${page}`, undefined, asAdmin);
    assert.equal(r.status, 200);
    listed.push(...r.body.result.map((t: { id: string }) => t.id));
    if (page >= r.body.result_info.total_pages) break;
  }
  assert.ok(listed.includes(aOnly.id));
  assert.ok(!listed.includes(bOnly.id) && !listed.includes(both.id));

  const update = { name: "taken over", permissions: ["dns_read"], account_id: A };
  for (const t of [bOnly, both]) {
    for (const [method, path, body] of [
      ["GET", `/user/tokens/${t.id}`, undefined],
      ["PUT", `/user/tokens/${t.id}`, update],
      ["PUT", `/user/tokens/${t.id}/value`, {}],
      ["DELETE", `/user/tokens/${t.id}`, undefined],
    ] as const) {
      const r = await p.api(method, path, body, asAdmin);
      assert.equal(r.status, 404, `${method} ${path}`);
      assert.equal(r.body.errors[0].code, 1003);
    }
    // Untouched: still valid, same name.
    assert.equal((await p.api("GET", "/user/tokens/verify", undefined, bearer(t.value))).status, 200);
    assert.equal((await p.api("GET", `/user/tokens/${t.id}`, undefined, key)).body.result.name, "t");
  }
  // The account routes of B are closed to it altogether.
  assert.equal((await p.api("GET", `/accounts/${B}/tokens`, undefined, asAdmin)).status, 403);
  // Its own account's tokens it does manage.
  assert.equal((await p.api("GET", `/user/tokens/${aOnly.id}`, undefined, asAdmin)).status, 200);
  assert.equal((await p.api("DELETE", `/user/tokens/${aOnly.id}`, undefined, asAdmin)).status, 200);
});

test("updates and rolls obey the subset rule, judged against the caller", async () => {
  const asAdmin = bearer((await tokenAdminOfA()).value);
  const mine = await mint({ permissions: ["dns_read"], account_id: A });
  const toB = await p.api("PUT", `/user/tokens/${mine.id}`, { name: "to B", permissions: ["dns_read"], account_id: B }, asAdmin);
  assert.equal(toB.status, 400);
  assert.equal(toB.body.errors[0].code, 1001);
  const stronger = await p.api("PUT", `/user/tokens/${mine.id}`, { name: "stronger", permissions: ["dns_edit"], account_id: A }, asAdmin);
  assert.equal(stronger.status, 400);
  assert.match(stronger.body.errors[0].message, /"DNS Edit"/);
  const star = await p.api("PUT", `/user/tokens/${mine.id}`, { name: "star", permissions: ["dns_read", "kv_read"], status: "active" }, asAdmin);
  assert.equal(star.status, 200);
  assert.deepEqual(reach(star.body.result), [A]);
  assert.equal(star.body.result.name, "star");

  // Rolling hands out the token's power: refused for a token holding more than the caller (dns_edit on A)...
  const edit = await mint({ permissions: ["dns_edit"], account_id: A });
  const roll = await p.api("PUT", `/user/tokens/${edit.id}/value`, {}, asAdmin);
  assert.equal(roll.status, 400);
  assert.equal(roll.body.errors[0].code, 1001);
  assert.equal((await p.api("GET", "/user/tokens/verify", undefined, bearer(edit.value))).status, 200, "the refused roll changed nothing");
  // ...allowed for one within it: the new value works and the old one is refused at once.
  const rolled = await p.api("PUT", `/user/tokens/${mine.id}/value`, {}, asAdmin);
  assert.equal(rolled.status, 200);
  assert.match(rolled.body.result, /^[A-Za-z0-9]{40}$/);
  assert.equal((await p.api("GET", "/user/tokens/verify", undefined, bearer(rolled.body.result))).status, 200);
  assert.equal((await p.api("GET", "/user/tokens/verify", undefined, bearer(mine.value))).status, 403);
  // Disabling through an update takes effect at once.
  const off = await p.api("PUT", `/user/tokens/${mine.id}`, { name: "off", permissions: ["dns_read"], account_id: A, status: "disabled" }, asAdmin);
  assert.equal(off.body.result.status, "disabled");
  assert.equal((await p.api("GET", "/user/tokens/verify", undefined, bearer(rolled.body.result))).status, 403);
});

test("a request with an IP condition is refused rather than minting an unrestricted token", async () => {
  const r = await p.api(
    "POST",
    "/user/tokens",
    { name: "ip", permissions: ["dns_read"], account_id: A, condition: { request_ip: { in: ["10.0.0.0/8"] } } },
    key,
  );
  assert.equal(r.status, 400);
  assert.match(r.body.errors[0].message, /condition\.request_ip\.in: IP conditions/);
});

test("cloudflare SDK: user.tokens create/list/get/update/value.update/delete honour the subset and scope rules", async () => {
  const admin = await tokenAdminOfA();
  const cf = new Cloudflare({ apiToken: admin.value, baseURL: p.apiUrl, maxRetries: 0 });
  const bOnly = await mint({ permissions: ["dns_read"], account_id: B });

  const created = await cf.user.tokens.create({
    name: "sdk",
    policies: [{ effect: "allow", resources: { "com.cloudflare.api.account.*": "*" }, permission_groups: [{ id: "kv_read" }] }],
  });
  assert.deepEqual(reach(created as never), [A]);
  await assert.rejects(
    cf.user.tokens.create({
      name: "sdk-b",
      policies: [{ effect: "allow", resources: { [`com.cloudflare.api.account.${B}`]: "*" }, permission_groups: [{ id: "kv_read" }] }],
    }),
    (e: InstanceType<typeof Cloudflare.BadRequestError>) => e.status === 400 && /1001/.test(JSON.stringify(e.errors)),
  );
  const ids: string[] = [];
  for await (const t of cf.user.tokens.list({ per_page: 5 })) ids.push((t as { id: string }).id);
  assert.ok(ids.includes(created.id!));
  assert.ok(!ids.includes(bOnly.id));
  const notFound = (e: InstanceType<typeof Cloudflare.NotFoundError>) => e.status === 404 && /1003/.test(JSON.stringify(e.errors));
  await assert.rejects(cf.user.tokens.get(bOnly.id), notFound);
  await assert.rejects(cf.user.tokens.delete(bOnly.id), notFound);
  await assert.rejects(cf.user.tokens.value.update(bOnly.id, {}), notFound);

  const updated = await cf.user.tokens.update(created.id!, {
    name: "sdk renamed",
    policies: [{ effect: "allow", resources: { [`com.cloudflare.api.account.${A}`]: "*" }, permission_groups: [{ id: "dns_read" }] }],
  });
  assert.equal(updated.name, "sdk renamed");
  const value = await cf.user.tokens.value.update(created.id!, {});
  assert.match(value, /^[A-Za-z0-9]{40}$/);
  assert.equal((await new Cloudflare({ apiToken: value, baseURL: p.apiUrl, maxRetries: 0 }).user.tokens.verify()).status, "active");
  assert.equal((await cf.user.tokens.delete(created.id!))?.id, created.id);
});
