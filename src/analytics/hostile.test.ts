import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { getIntrospectionQuery } from "graphql";
import type { TestPlatform } from "../core/testing/platform.js";
import { createAccount, startPlatform } from "../workers/testing/helpers.js";
import { eventually } from "../core/testing/eventually.js";
import { encodeQuery, tcpQuery } from "../dns/testing/helpers.js";
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
  p = await startPlatform(["--dns-port", "0"]);
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

test("aliases cannot multiply an answer: past QueryLimits.values leaf values (rows times the leaves a row selects) the read is refused, not shaped", async () => {
  // B's zone, 60 names asked over DNS: 60 groups of dnsAnalyticsAdaptiveGroups.
  const zone = await p.api("POST", "/zones", { name: "graphql-b.example", account: { id: accountB } }, p.keyHeaders());
  assert.equal(zone.status, 200, JSON.stringify(zone.body));
  const dnsPort = Number(p.endpoints.dns_tcp.split(":").pop());
  const names = 60;
  for (let i = 0; i < names; i++) await tcpQuery(dnsPort, encodeQuery(`n${i}.graphql-b.example`, "A"));
  const type = "ZoneDnsAnalyticsAdaptiveGroups";
  const variables = {
    z: zone.body.result.id,
    f: { datetime_geq: new Date(Date.now() - 3_600_000).toISOString(), datetime_leq: new Date(Date.now() + 60_000).toISOString() },
  };
  const reads = (n: number, selection: string) =>
    `query ($z: String, $f: ${type}Filter_InputObject) { viewer { zones(filter: { zoneTag: $z }) { ${Array.from(
      { length: n },
      (_, i) => `r${i}: dnsAnalyticsAdaptiveGroups(limit: 100, filter: $f) { ${selection} }`,
    ).join(" ")} } } }`;
  await eventually(
    async () => {
      const r = await p.api("POST", "/graphql", { query: reads(1, "count dimensions { queryName }"), variables }, asB);
      assert.equal(r.body.errors, null, JSON.stringify(r.body.errors));
      return r.body.data.viewer.zones[0].r0.length >= names;
    },
    "the 60 groups in the rollups",
    60_000,
  );
  // 400 aliases in a fragment, spread by 20 reads of 60 rows: 480,000 values from 60 rows in about 1,500 tokens.
  const aliases = 400;
  const fragment = `fragment Many on ${type} { dimensions { ${Array.from({ length: aliases }, (_, i) => `a${i}: queryName`).join(" ")} } }`;
  const amplified = await p.api("POST", "/graphql", { query: `${reads(20, "...Many")} ${fragment}`, variables }, asB);
  assert.equal(amplified.status, 200);
  assert.equal(amplified.body.data, null, "nothing answered");
  assert.match(amplified.body.errors[0].message, new RegExp(`more than ${QueryLimits.values} values`));
  assert.ok(names * 20 * aliases > QueryLimits.values);
  // Under the bound the same aliases answer: 2 reads of 60 rows of 400 values.
  const within = await p.api("POST", "/graphql", { query: `${reads(2, "...Many")} ${fragment}`, variables }, asB);
  assert.equal(within.body.errors, null, JSON.stringify(within.body.errors));
  assert.equal(within.body.data.viewer.zones[0].r1[0].dimensions.a399, within.body.data.viewer.zones[0].r1[0].dimensions.a0);
});

test("one field of the answer named more than QueryLimits.sameFieldNodes times (directly, nested, through fragments) is refused before validation; at the bound it runs", async () => {
  const times = (n: number, text: (i: number) => string) => Array.from({ length: n }, (_, i) => text(i)).join(" ");
  const refusal = new RegExp(`names the field (viewer|accounts) more than ${QueryLimits.sameFieldNodes} times`);
  const refused = async (query: string) => {
    const r = await graphql(query, asB);
    assert.equal(r.status, 200);
    assert.equal(r.body.data, null, "nothing ran");
    assert.match(r.body.errors?.[0]?.message ?? "", refusal, JSON.stringify(r.body.errors));
  };
  // 500 of these fit in the token bound; graphql-js' validation compared every pair: 0.4-0.8 s of the event loop.
  await refused(`{ ${times(480, () => "viewer { __typename }")} }`);
  await refused(`{ ${times(QueryLimits.sameFieldNodes + 1, () => "viewer { __typename }")} }`);
  // Nested: 6 viewers of 5 accounts each name viewer.accounts 30 times.
  const accounts = `accounts(filter: { accountTag: "${accountB}" }) { __typename }`;
  await refused(`{ ${times(6, () => `viewer { ${times(5, () => accounts)} }`)} }`);
  // Through fragments, spread once each, and in a fragment no one spreads (validation compares inside it too).
  await refused(`{ viewer { ${times(26, (i) => `...F${i}`)} } } ${times(26, (i) => `fragment F${i} on Viewer { ${accounts} }`)}`);
  await refused(`{ viewer { __typename } } fragment Unused on Viewer { ${times(26, () => accounts)} }`);
  const atBound = await graphql(`{ ${times(QueryLimits.sameFieldNodes, () => `viewer { ${accounts} }`)} }`, asB);
  assert.equal(atBound.body.errors, null, JSON.stringify(atBound.body.errors));
  assert.deepEqual(atBound.body.data.viewer.accounts, [{ __typename: "Account" }]);
});

test("a fragment that spreads itself (directly, through another, or unused) is refused as a cycle, not a 500 (the same-field check once followed it without end)", async () => {
  for (const query of [
    `{ viewer { ...A } } fragment A on Viewer { accounts(filter: { accountTag: "${accountB}" }) { ...A } }`,
    `{ viewer { ...A } } fragment A on Viewer { x { ...B } } fragment B on Viewer { y { ...A } }`,
    `{ viewer { __typename } } fragment A on Viewer { x { x { ...A } } }`,
  ]) {
    const r = await graphql(query, asB);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.data, null, "nothing ran");
    assert.match(r.body.errors?.[0]?.message ?? "", /Cannot spread fragment "[AB]" within itself/, JSON.stringify(r.body.errors));
  }
});
