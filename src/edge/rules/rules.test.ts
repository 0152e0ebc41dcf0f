import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import Cloudflare from "cloudflare";
import { startTestPlatform, type TestPlatform } from "../../core/testing/platform.js";
import { createAccount } from "../../workers/testing/helpers.js";
import { eventually } from "../../core/testing/eventually.js";

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d+Z$/;
const HEX32 = /^[0-9a-f]{32}$/;
const PHASE = "http_request_cache_settings";

const cacheEverything = {
  expression: '(http.request.uri.path.extension in {"html" "htm"}) or starts_with(http.request.uri.path, "/static/")',
  action: "set_cache_settings",
  action_parameters: { cache: true, edge_ttl: { mode: "override_origin", default: 3600 }, browser_ttl: { mode: "respect_origin" } },
  description: "cache everything",
};
const bypassApi = {
  expression: 'http.request.uri.path matches "^/api/" and http.request.method ne "GET"',
  action: "set_cache_settings",
  action_parameters: { cache: false },
  description: "no API writes",
  enabled: true,
};

describe("Cache Rules: the Rulesets API for http_request_cache_settings (hosted paths and shapes)", () => {
  let p: TestPlatform;
  let zoneA: string;
  let zoneB: string;
  let tokenB: string;
  const as = (token: string) => ({ authorization: `Bearer ${token}` });
  const token = async (permissions: string[], accountId = p.accountId) => {
    const r = await p.api("POST", "/user/tokens", { name: `t-${permissions.join("-")}`, permissions, account_id: accountId }, p.keyHeaders());
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body.result.value as string;
  };
  const entrypoint = (zone: string) => `/zones/${zone}/rulesets/phases/${PHASE}/entrypoint`;

  before(async () => {
    p = await startTestPlatform();
    zoneA = (await p.api("POST", "/zones", { name: "rules-a.example", account: { id: p.accountId } })).body.result.id;
    const accountB = await createAccount(p, "rules-b");
    zoneB = (await p.api("POST", "/zones", { name: "rules-b.example", account: { id: accountB } }, p.keyHeaders())).body.result.id;
    tokenB = await token(["cache_rules_edit", "dns_read"], accountB);
  });
  after(() => p?.dispose());

  it("a zone without rules: the entry point is the hosted 404 (10003), the list is empty", async () => {
    const r = await p.api("GET", entrypoint(zoneA));
    assert.equal(r.status, 404);
    assert.deepEqual(r.body.errors, [{ code: 10003, message: `could not find entrypoint ruleset in the ${PHASE} phase` }]);
    const list = await p.api("GET", `/zones/${zoneA}/rulesets`);
    assert.equal(list.status, 200);
    assert.deepEqual(list.body.result, []);
  });

  it("PUT of the entry point creates the ruleset in the hosted shape; GET answers the same; a second PUT keeps ids and bumps versions", async () => {
    const put = await p.api("PUT", entrypoint(zoneA), { rules: [cacheEverything, bypassApi] });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    const rs = put.body.result;
    assert.match(rs.id, HEX32);
    assert.deepEqual(
      { ...rs, id: "", last_updated: "", rules: [] },
      {
        id: "",
        name: "default",
        description: "",
        kind: "zone",
        phase: PHASE,
        version: "1",
        last_updated: "",
        rules: [],
      },
    );
    assert.match(rs.last_updated, ISO);
    assert.equal(rs.rules.length, 2);
    const [first, second] = rs.rules;
    assert.match(first.id, HEX32);
    assert.deepEqual(first, {
      id: first.id,
      version: "1",
      action: "set_cache_settings",
      action_parameters: cacheEverything.action_parameters,
      expression: cacheEverything.expression,
      description: "cache everything",
      enabled: true,
      ref: first.id,
      last_updated: rs.last_updated,
    });
    assert.equal(second.description, "no API writes");
    assert.deepEqual((await p.api("GET", entrypoint(zoneA))).body.result, rs);

    // Read, change one rule, PUT back (with the read-only fields as GET gave them): ids kept, versions as changed.
    const again = await p.api("PUT", entrypoint(zoneA), {
      ...rs,
      rules: [first, { ...second, description: "changed" }, { ...bypassApi, description: "third", ref: "my-ref" }],
    });
    assert.equal(again.status, 200, JSON.stringify(again.body));
    const [a1, a2, a3] = again.body.result.rules;
    assert.equal(again.body.result.id, rs.id);
    assert.equal(again.body.result.version, "2");
    assert.deepEqual([a1.id, a1.version, a1.last_updated], [first.id, "1", first.last_updated], "an unchanged rule keeps its version and time");
    assert.deepEqual([a2.id, a2.version], [second.id, "2"]);
    assert.equal(a3.ref, "my-ref");
    assert.notEqual(a3.id, first.id);

    const list = await p.api("GET", `/zones/${zoneA}/rulesets`);
    assert.deepEqual(
      list.body.result,
      [{ ...again.body.result, rules: undefined }].map(({ rules: _r, ...rest }) => rest),
    );
    assert.deepEqual((await p.api("GET", `/zones/${zoneA}/rulesets/${rs.id}`)).body.result, again.body.result);
  });

  it("the single-rule endpoints: add (with a position), edit (fields and position), delete; each answers the ruleset", async () => {
    const rs = (await p.api("PUT", entrypoint(zoneA), { rules: [cacheEverything] })).body.result;
    const base = `/zones/${zoneA}/rulesets/${rs.id}/rules`;
    const added = await p.api("POST", base, { ...bypassApi, position: { index: 1 } });
    assert.equal(added.status, 200, JSON.stringify(added.body));
    assert.deepEqual(
      added.body.result.rules.map((r: { description: string }) => r.description),
      ["no API writes", "cache everything"],
    );
    const newId = added.body.result.rules[0].id;
    const edited = await p.api("PATCH", `${base}/${newId}`, { enabled: false, position: { after: rs.rules[0].id } });
    assert.equal(edited.status, 200, JSON.stringify(edited.body));
    assert.deepEqual(
      edited.body.result.rules.map((r: { id: string; enabled: boolean; version: string }) => [r.id, r.enabled, r.version]),
      [
        [rs.rules[0].id, true, "1"],
        [newId, false, "2"],
      ],
    );
    assert.equal(edited.body.result.rules[1].expression, bypassApi.expression, "fields not given are kept");
    const removed = await p.api("DELETE", `${base}/${newId}`);
    assert.equal(removed.status, 200);
    assert.deepEqual(
      removed.body.result.rules.map((r: { id: string }) => r.id),
      [rs.rules[0].id],
    );
    assert.equal((await p.api("DELETE", `${base}/${newId}`)).status, 404);
    assert.equal((await p.api("POST", `/zones/${zoneA}/rulesets/${"0".repeat(32)}/rules`, bypassApi)).status, 404);
  });

  it("the cloudflare SDK's rulesets.phases.update/get, rulesets.list/get/create/delete and rules.create/edit/delete work unchanged", async () => {
    const cf = new Cloudflare({ apiToken: p.token, baseURL: p.apiUrl, maxRetries: 0 });
    const zone = (await p.api("POST", "/zones", { name: "rules-sdk.example", account: { id: p.accountId } })).body.result.id;
    await assert.rejects(cf.rulesets.phases.get(PHASE, { zone_id: zone }), (e: any) => e.status === 404 && e.errors[0].code === 10003);
    const created: any = await cf.rulesets.create({ zone_id: zone, kind: "zone", name: "cache rules", phase: PHASE, rules: [] });
    assert.equal(created.phase, PHASE);
    assert.equal(created.name, "cache rules");
    const updated: any = await cf.rulesets.phases.update(PHASE, {
      zone_id: zone,
      rules: [
        {
          action: "set_cache_settings",
          expression: 'http.host eq "www.rules-sdk.example"',
          action_parameters: {
            cache: true,
            cache_key: { ignore_query_strings_order: true, custom_key: { query_string: { exclude: { list: ["utm_source"] } } } },
            serve_stale: { disable_stale_while_updating: true },
            respect_strong_etags: true,
            edge_ttl: {
              mode: "respect_origin",
              status_code_ttl: [
                { status_code: 404, value: 30 },
                { status_code_range: { from: 500, to: 599 }, value: -1 },
              ],
            },
          },
        },
      ],
    });
    assert.equal(updated.id, created.id);
    assert.equal(updated.version, "2");
    assert.equal(updated.rules.length, 1);
    const got = await cf.rulesets.phases.get(PHASE, { zone_id: zone });
    assert.deepEqual(got, updated);
    const listed = [];
    for await (const r of cf.rulesets.list({ zone_id: zone })) listed.push(r);
    assert.deepEqual(
      listed.map((r) => [r.id, r.phase, r.kind]),
      [[created.id, PHASE, "zone"]],
    );
    assert.equal((await cf.rulesets.get(created.id, { zone_id: zone })).version, "2");
    const withRule: any = await cf.rulesets.rules.create(created.id, {
      zone_id: zone,
      action: "set_cache_settings",
      expression: 'ends_with(http.request.uri.path, ".css")',
      action_parameters: { browser_ttl: { mode: "override_origin", default: 600 } },
    });
    assert.equal(withRule.rules.length, 2);
    const ruleId = withRule.rules[1]!.id!;
    const editedRule: any = await cf.rulesets.rules.edit(ruleId, {
      ruleset_id: created.id,
      zone_id: zone,
      action: "set_cache_settings",
      expression: 'ends_with(http.request.uri.path, ".js")',
    });
    assert.equal(editedRule.rules[1]!.expression, 'ends_with(http.request.uri.path, ".js")');
    const deletedRule: any = await cf.rulesets.rules.delete(ruleId, { ruleset_id: created.id, zone_id: zone });
    assert.equal(deletedRule.rules.length, 1);
    await cf.rulesets.delete(created.id, { zone_id: zone });
    await assert.rejects(cf.rulesets.phases.get(PHASE, { zone_id: zone }), (e: any) => e.status === 404);
  });

  it("what is not built is refused with a 400 naming it, and nothing is written", async () => {
    const before = (await p.api("PUT", entrypoint(zoneA), { rules: [cacheEverything] })).body.result;
    const refusals: [unknown, string, string?][] = [
      [
        { rules: [{ ...cacheEverything, action: "block" }] },
        '/rules/0/action: the action "block" (the phase http_request_cache_settings takes "set_cache_settings" only) is not supported here (docs/cache.md, "Cache Rules")',
        "/rules/0/action",
      ],
      [
        { rules: [{ ...cacheEverything, action_parameters: { cache: true, origin_cache_control: true } }] },
        '/rules/0/action_parameters/origin_cache_control: the setting origin_cache_control is not supported here (docs/cache.md, "Cache Rules")',
      ],
      [
        { rules: [{ ...cacheEverything, action_parameters: { cache: true, mystery: 1 } }] },
        '/rules/0/action_parameters/mystery: the field "mystery" is not supported here (docs/cache.md, "Cache Rules")',
      ],
      [
        { rules: [{ ...cacheEverything, action_parameters: { cache_key: { custom_key: { header: { include: ["x"] } } } } }] },
        '/rules/0/action_parameters/cache_key/custom_key/header: the setting header is not supported here (docs/cache.md, "Cache Rules")',
      ],
      [
        { rules: [{ ...cacheEverything, logging: { enabled: true } }] },
        '/rules/0/logging: the rule field "logging" is not supported here (docs/cache.md, "Cache Rules")',
      ],
      [
        { rules: [{ ...cacheEverything, expression: 'http.cookie contains "session"' }] },
        'Filter parsing error (1:1): unknown field "http.cookie": the fields here are http.host, http.request.uri.path, http.request.uri.path.extension, http.request.uri.query, http.request.method, http.request.full_uri',
        "/rules/0/expression",
      ],
      [
        { rules: [cacheEverything, { ...cacheEverything, expression: 'http.host wildcard "*.x"' }] },
        'Filter parsing error (1:11): the operator "wildcard" is not supported here: the operators are eq, ne, in, contains, matches',
        "/rules/1/expression",
      ],
      [
        { rules: [{ ...cacheEverything, action_parameters: { edge_ttl: { mode: "override_origin" } } }] },
        "/rules/0/action_parameters/edge_ttl/default: must be a whole number from 1 to 31536000",
      ],
      [
        { rules: [{ ...cacheEverything, action_parameters: { edge_ttl: { mode: "override_origin", default: 31536001 } } }] },
        "/rules/0/action_parameters/edge_ttl/default: must be a whole number from 1 to 31536000",
      ],
      [
        { rules: [{ ...cacheEverything, action_parameters: { edge_ttl: { mode: "forever" } } }] },
        '/rules/0/action_parameters/edge_ttl/mode: must be one of "respect_origin", "bypass_by_default", "override_origin"',
      ],
      [
        { rules: [{ ...cacheEverything, action_parameters: { browser_ttl: { mode: "respect_origin", default: 60 } } }] },
        '/rules/0/action_parameters/browser_ttl/default: is only taken with the mode "override_origin"',
      ],
      [
        { rules: [{ ...cacheEverything, action_parameters: { browser_ttl: { mode: "bypass_by_default" } } }] },
        '/rules/0/action_parameters/browser_ttl/mode: must be one of "respect_origin", "bypass", "override_origin"',
      ],
      [
        { rules: [{ ...cacheEverything, action_parameters: { edge_ttl: { mode: "respect_origin", status_code_ttl: [{ status_code: 600, value: 1 }] } } }] },
        "/rules/0/action_parameters/edge_ttl/status_code_ttl/0/status_code: must be a whole number from 100 to 599",
      ],
      [
        {
          rules: [
            { ...cacheEverything, action_parameters: { cache_key: { custom_key: { query_string: { include: { all: true }, exclude: { list: ["a"] } } } } } },
          ],
        },
        "/rules/0/action_parameters/cache_key/custom_key/query_string: takes include or exclude, not both",
      ],
      [{ rules: [{ ...cacheEverything, action_parameters: { cache: "yes" } }] }, "/rules/0/action_parameters/cache: must be true or false"],
      [{ rules: [{ ...cacheEverything, id: "f".repeat(32) }] }, "/rules/0/id: names no rule of this ruleset (leave id out for a new rule)"],
      [
        {
          rules: [
            { ...cacheEverything, ref: "x" },
            { ...bypassApi, ref: "x" },
          ],
        },
        "/rules/1/ref: is the ref of another rule of the ruleset",
      ],
      [{ rules: [cacheEverything], kind: "managed" }, '/kind: the kind "managed" (zone rulesets only) is not supported here (docs/cache.md, "Cache Rules")'],
      [
        { rules: [cacheEverything], phase: "http_request_firewall_custom" },
        'the phase "http_request_firewall_custom" is not supported here: this platform has rulesets of the phase http_request_cache_settings only (Cache Rules)',
      ],
      [{ rules: "all" }, "/rules: must be an array of rules"],
      [{}, "/rules: must be an array of rules"],
      [[], "/: must be a JSON object"],
      [{ rules: Array.from({ length: 301 }, () => cacheEverything) }, "a ruleset of the phase http_request_cache_settings holds at most 300 rules (301 given)"],
    ];
    for (const [body, message, pointer] of refusals) {
      const r = await p.api("PUT", entrypoint(zoneA), body);
      assert.equal(r.status, 400, JSON.stringify(body).slice(0, 200));
      assert.equal(r.body.errors[0].code, 20021);
      assert.equal(r.body.errors[0].message, message);
      if (pointer) assert.deepEqual(r.body.errors[0].source, { pointer });
    }
    for (const phase of ["http_request_firewall_custom", "__proto__"]) {
      for (const method of ["GET", "PUT"]) {
        const r = await p.api(method, `/zones/${zoneA}/rulesets/phases/${phase}/entrypoint`, method === "PUT" ? { rules: [] } : undefined);
        assert.equal(r.status, 400, `${method} ${phase}`);
        assert.match(r.body.errors[0].message, new RegExp(`^the phase "${phase}" is not supported here`));
      }
    }
    assert.deepEqual((await p.api("GET", entrypoint(zoneA))).body.result, before, "nothing of a refused PUT is written");
  });

  it("bad input is bounded: a huge expression, deep nesting, a catastrophic regex and many regexes are clean 400s", async () => {
    const rule = (expression: string) => ({ rules: [{ ...cacheEverything, expression }] });
    const huge = await p.api("PUT", entrypoint(zoneA), rule(`http.host eq "${"a".repeat(100_000)}"`));
    assert.equal(huge.status, 400);
    assert.equal(huge.body.errors[0].message, "Filter parsing error (1:1): the expression is 100015 characters long; at most 4096 are allowed");
    const deep = await p.api("PUT", entrypoint(zoneA), rule(`${"(".repeat(2000)}http.host eq "a"${")".repeat(2000)}`));
    assert.equal(deep.status, 400);
    assert.equal(deep.body.errors[0].message, "Filter parsing error (1:65): the expression nests deeper than 64 levels of parentheses and not");
    const nots = await p.api("PUT", entrypoint(zoneA), rule(`${"!".repeat(4000)}http.host eq "a"`));
    assert.equal(nots.status, 400);
    const repeat = await p.api("PUT", entrypoint(zoneA), rule('http.host matches "((a{100}){100}){100}"'));
    assert.equal(repeat.status, 400);
    assert.match(repeat.body.errors[0].message, /^Filter parsing error \(1:19\): invalid regular expression .*invalid repeat count/);
    // Each pattern is under the per-regex bound; together they pass the ruleset's.
    const many = Array.from({ length: 10 }, () => ({ ...cacheEverything, expression: 'http.request.uri.path matches "[ab]{1,200}c"' }));
    const budget = await p.api("PUT", entrypoint(zoneA), { rules: many });
    assert.equal(budget.status, 400);
    assert.match(budget.body.errors[0].message, /^the rules' regular expressions together are too large \(\d+ RE2 instructions, at most 1000 per ruleset\)$/);
    // A pattern that backtracking engines take exponential time on is stored and the platform still answers at once.
    const redos = await p.api("PUT", entrypoint(zoneA), rule('http.request.uri.path matches "^(a+)+$"'));
    assert.equal(redos.status, 200);
    assert.equal((await p.api("GET", "/user/tokens/verify")).status, 200);
  });

  it("tenants never see each other's rules; read-only tokens read but do not edit; the permission groups are listed", async () => {
    const put = await p.api("PUT", entrypoint(zoneB), { rules: [bypassApi] }, as(tokenB));
    assert.equal(put.status, 200, JSON.stringify(put.body));
    const rsB = put.body.result;
    const before = (await p.api("GET", entrypoint(zoneA))).body.result;
    // Account B's token on account A's zone: missing, on every route.
    for (const [method, path, body] of [
      ["GET", entrypoint(zoneA), undefined],
      ["PUT", entrypoint(zoneA), { rules: [] }],
      ["GET", `/zones/${zoneA}/rulesets`, undefined],
      ["GET", `/zones/${zoneA}/rulesets/${before.id}`, undefined],
      ["POST", `/zones/${zoneA}/rulesets/${before.id}/rules`, bypassApi],
      ["DELETE", `/zones/${zoneA}/rulesets/${before.id}`, undefined],
    ] as const) {
      const r = await p.api(method, path, body, as(tokenB));
      assert.equal(r.status, 404, `${method} ${path}`);
    }
    // A's ruleset id under B's zone is not found either (ids are per zone).
    assert.equal((await p.api("GET", `/zones/${zoneB}/rulesets/${before.id}`, undefined, as(tokenB))).status, 404);
    assert.deepEqual((await p.api("GET", entrypoint(zoneA))).body.result, before, "B changed nothing of A");
    assert.equal((await p.api("GET", entrypoint(zoneB))).status, 404, "the bootstrap token is account A's only");

    const reader = await token(["cache_rules_read"]);
    assert.equal((await p.api("GET", entrypoint(zoneA), undefined, as(reader))).status, 200);
    assert.equal((await p.api("PUT", entrypoint(zoneA), { rules: [] }, as(reader))).status, 403);
    const settingsOnly = await token(["zone_settings_edit", "dns_read"]);
    assert.equal((await p.api("GET", entrypoint(zoneA), undefined, as(settingsOnly))).status, 403);
    const unrelated = await token(["kv_edit"]);
    assert.equal((await p.api("GET", entrypoint(zoneA), undefined, as(unrelated))).status, 404);
    const names = (await p.api("GET", "/user/tokens/permission_groups")).body.result.map((g: { name: string }) => g.name);
    assert.ok(names.includes("Cache Settings Read") && names.includes("Cache Settings Edit"), names.join(", "));
    assert.equal(rsB.rules.length, 1);
  });

  it("a deleted zone's ruleset goes with it; a zone of the same name starts without rules", async () => {
    const id = (await p.api("POST", "/zones", { name: "rules-gone.example", account: { id: p.accountId } })).body.result.id;
    assert.equal((await p.api("PUT", entrypoint(id), { rules: [cacheEverything] })).status, 200);
    assert.equal((await p.api("DELETE", `/zones/${id}`)).status, 200);
    const again = (await p.api("POST", "/zones", { name: "rules-gone.example", account: { id: p.accountId } })).body.result.id;
    await eventually(async () => (await p.api("GET", entrypoint(again))).status === 404, "the new zone has no rules");
    assert.equal((await p.api("GET", entrypoint(id))).status, 404);
  });
});
