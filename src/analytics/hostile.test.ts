import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { getIntrospectionQuery } from "graphql";
import type { TestPlatform } from "../core/testing/platform.js";
import { createAccount, startPlatform } from "../workers/testing/helpers.js";
import { QueryLimits } from "./schema.js";

/**
 * POST /client/v4/graphql against a hostile tenant (two accounts): introspection repeated under aliases is refused
 * before it runs (80 `__schema` fit in the token bound and took a second and a megabyte each query); a tool's one
 * introspection query still runs; another account's accountTag and zoneTag read nothing.
 */
let p: TestPlatform;
let accountB = "";
let asB: Record<string, string> = {};
before(async () => {
  p = await startPlatform();
  accountB = await createAccount(p, "graphql-b");
  const token = await p.api("POST", "/user/tokens", { name: "b", permissions: ["analytics_read"], account_id: accountB }, p.keyHeaders());
  assert.equal(token.status, 200, JSON.stringify(token.body));
  asB = { authorization: `Bearer ${token.body.result.value}` };
});
after(() => p?.dispose());

const graphql = (query: string, headers?: Record<string, string>) => p.api("POST", "/graphql", { query }, headers);

test("introspection asked more than QueryLimits.introspectionFields times is refused before it runs; one tool's query runs", async () => {
  const aliased = `{ ${Array.from({ length: 80 }, (_, i) => `a${i}: __schema { types { fields { args { name } name } inputFields { name } enumValues { name } } }`).join(" ")} }`;
  const r = await graphql(aliased, asB);
  assert.equal(r.status, 200);
  assert.equal(r.body.data, null, "nothing ran");
  assert.match(r.body.errors[0].message, new RegExp(`__schema or __type more than ${QueryLimits.introspectionFields} times`));
  // Through fragments too: each spread names its own field.
  const viaFragments = `{ ${Array.from({ length: QueryLimits.introspectionFields + 1 }, (_, i) => `...F${i}`).join(" ")} } ${Array.from(
    { length: QueryLimits.introspectionFields + 1 },
    (_, i) => `fragment F${i} on Query { t${i}: __type(name: "Query") { name } }`,
  ).join(" ")}`;
  assert.equal((await graphql(viaFragments, asB)).body.data, null);
  const tool = await graphql(getIntrospectionQuery(), asB);
  assert.equal(tool.body.errors, null, JSON.stringify(tool.body.errors));
  assert.ok(tool.body.data.__schema.types.length > 10);
});

test("B's token reads nothing of A's account or zone", async () => {
  const zone = await p.api("POST", "/zones", { name: "graphql-a.example", account: { id: p.accountId } });
  assert.equal(zone.status, 200, JSON.stringify(zone.body));
  const account = await graphql(`{ viewer { accounts(filter: { accountTag: "${p.accountId}" }) { __typename } } }`, asB);
  assert.match(account.body.errors[0].message, /not authorized for account/);
  const zoneAnswer = await graphql(`{ viewer { zones(filter: { zoneTag: "${zone.body.result.id}" }) { __typename } } }`, asB);
  assert.match(zoneAnswer.body.errors[0].message, /not authorized for zone/);
});

test(
  "fragments spread twice at every level (2^40 spreads in 400 tokens) are expanded once each: the answer comes, the event loop never stalls",
  { timeout: 120_000 },
  async () => {
    const type = "AccountWorkersInvocationsAdaptive";
    const levels = 40;
    const fragments = Array.from({ length: levels }, (_, i) => `fragment F${i} on ${type} { ...F${i + 1} ...F${i + 1} }`).join(" ");
    const query = `query ($a: String, $f: ${type}Filter_InputObject) { viewer { accounts(filter: { accountTag: $a }) { workersInvocationsAdaptive(limit: 10, filter: $f) { ...F0 } } } } ${fragments} fragment F${levels} on ${type} { dimensions { scriptName } sum { requests } }`;
    const variables = { a: accountB, f: { datetime_geq: new Date(Date.now() - 3_600_000).toISOString(), datetime_leq: new Date().toISOString() } };
    const r = await p.api("POST", "/graphql", { query, variables }, asB);
    assert.equal(r.status, 200);
    assert.equal(r.body.errors, null, JSON.stringify(r.body.errors));
    assert.deepEqual(r.body.data.viewer.accounts[0].workersInvocationsAdaptive, []);
    // The same through the real schema's path (a query that also asks for introspection is run there).
    const withTypename = query.replace("{ viewer {", "{ __schema { queryType { name } } viewer {");
    const both = await p.api("POST", "/graphql", { query: withTypename, variables }, asB);
    assert.equal(both.body.errors, null, JSON.stringify(both.body.errors));
    assert.equal(both.body.data.__schema.queryType.name, "Query");
  },
);
