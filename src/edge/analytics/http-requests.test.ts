import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { request } from "undici";
import { eventually } from "../../core/testing/eventually.js";
import { startTestPlatform, type TestPlatform } from "../../core/testing/platform.js";
import { createAccount } from "../../workers/testing/helpers.js";
import { loopbackBlock, startOrigin } from "../testing/origins.js";

// httpRequestsAdaptiveGroups (GraphQL Analytics API, viewer.zones): tenants' traffic counted by the edge as each request
// ends, written to the per-minute rollups, grouped by what the query selects; per zone, for its account only.
let p: TestPlatform;
let zoneA: string;
let zoneB: string;
let accountB: string;
const cleanups: (() => unknown)[] = [];

const QUERY = `
  query traffic($zoneTag: String, $filter: ZoneHttpRequestsAdaptiveGroupsFilter_InputObject) {
    viewer {
      zones(filter: { zoneTag: $zoneTag }) {
        httpRequestsAdaptiveGroups(limit: 100, filter: $filter, orderBy: [clientRequestHTTPHost_ASC, edgeResponseStatus_ASC]) {
          count
          sum { edgeResponseBytes visits }
          dimensions { clientRequestHTTPHost edgeResponseStatus cacheStatus }
        }
      }
    }
  }`;

const graphql = async (query: string, variables: Record<string, unknown>, headers: Record<string, string> = p.headers()) => {
  const res = await request(`${p.apiUrl}/graphql`, {
    method: "POST",
    headers: { ...headers, "content-type": "application/json" },
    body: JSON.stringify({ query, variables }),
  });
  assert.equal(res.statusCode, 200);
  return (await res.body.json()) as any;
};
const range = () => ({ datetime_geq: new Date(Date.now() - 3_600_000).toISOString(), datetime_leq: new Date(Date.now() + 60_000).toISOString() });
const edge = async (host: string, path = "/", headers: Record<string, string> = {}) => {
  const res = await request(`${p.url}${path}`, { headers: { host, ...headers } });
  await res.body.text();
  return res.statusCode;
};

before(async () => {
  const address = loopbackBlock()(1);
  const origin = await startOrigin({ after: (fn: () => unknown) => void cleanups.push(fn) }, { address, name: "analytics" });
  assert.ok(origin);
  p = await startTestPlatform({ args: ["--origin-allow", "127.0.0.0/8"] });
  zoneA = (await p.api("POST", "/zones", { name: "traffic-a.example", account: { id: p.accountId } })).body.result.id;
  accountB = await createAccount(p, "traffic-b");
  zoneB = (await p.api("POST", "/zones", { name: "traffic-b.example", account: { id: accountB } }, p.keyHeaders())).body.result.id;
  for (const zone of [zoneA, zoneB]) {
    const r = await p.api("POST", `/zones/${zone}/dns_records`, { type: "A", name: "www", content: address, proxied: true }, p.keyHeaders());
    assert.equal(r.status, 200, JSON.stringify(r.body));
  }
});
after(async () => {
  await p?.stop();
  for (const fn of cleanups) await fn();
});

test("a zone's requests are counted by host, status and cache status, with bytes and visits, for its account only", async () => {
  for (let i = 0; i < 3; i++) assert.equal(await edge("www.traffic-a.example", `/page-${i}`), 200);
  // A click from the site's own page is not a visit; from elsewhere it is.
  assert.equal(await edge("www.traffic-a.example", "/next", { referer: "https://www.traffic-a.example/page-0" }), 200);
  assert.equal(await edge("www.traffic-a.example", "/in", { referer: "https://search.example/" }), 200);
  // No record: the edge's own error page, still the zone's traffic.
  assert.equal(await edge("nothing.traffic-a.example"), 404);
  assert.equal(await edge("www.traffic-b.example"), 200);

  // Rollups are written every few seconds.
  let groups: any[] = [];
  await eventually(
    async () => {
      const r = await graphql(QUERY, { zoneTag: zoneA, filter: range() });
      assert.equal(r.errors, null, JSON.stringify(r.errors));
      groups = r.data.viewer.zones[0].httpRequestsAdaptiveGroups;
      return groups.length === 2 && groups[1].count === 5;
    },
    "the zone's requests in the rollups",
    60_000,
  );
  assert.deepEqual(groups[0].dimensions, { clientRequestHTTPHost: "nothing.traffic-a.example", edgeResponseStatus: 404, cacheStatus: "dynamic" });
  assert.equal(groups[0].count, 1);
  assert.deepEqual(groups[1].dimensions, { clientRequestHTTPHost: "www.traffic-a.example", edgeResponseStatus: 200, cacheStatus: "dynamic" });
  assert.equal(groups[1].sum.visits, 4, "five requests, one of them from the site's own page");
  assert.ok(groups[1].sum.edgeResponseBytes > 5 * "origin analytics".length, "heads and bodies counted");

  // Filters and grouping by time: one minute (or two, if the requests straddled one), all of the zone's six requests.
  const byMinute = await graphql(
    `
      query ($zoneTag: String, $filter: ZoneHttpRequestsAdaptiveGroupsFilter_InputObject) {
        viewer {
          zones(filter: { zoneTag: $zoneTag }) {
            httpRequestsAdaptiveGroups(limit: 10, filter: $filter, orderBy: [datetimeMinute_ASC]) {
              count
              dimensions {
                datetimeMinute
              }
            }
          }
        }
      }
    `,
    { zoneTag: zoneA, filter: { ...range(), edgeResponseStatus: 200 } },
  );
  const minutes = byMinute.data.viewer.zones[0].httpRequestsAdaptiveGroups as { count: number; dimensions: { datetimeMinute: string } }[];
  assert.equal(
    minutes.reduce((n, g) => n + g.count, 0),
    5,
  );
  assert.match(minutes[0].dimensions.datetimeMinute, /^\d{4}-\d\d-\d\dT\d\d:\d\d:00Z$/);

  // The other account's zone: its own numbers; account A's caller cannot read it, nor B's caller A's.
  const tokenB = await p.api("POST", "/user/tokens", { name: "b-analytics", permissions: ["analytics_read"], account_id: accountB }, p.keyHeaders());
  assert.equal(tokenB.status, 200, JSON.stringify(tokenB.body));
  const asB = { authorization: `Bearer ${tokenB.body.result.value}` };
  let bOwn: any;
  await eventually(
    async () => {
      bOwn = await graphql(QUERY, { zoneTag: zoneB, filter: range() }, asB);
      return bOwn.data?.viewer.zones[0].httpRequestsAdaptiveGroups.length === 1;
    },
    "account B's zone counted",
    60_000,
  );
  assert.equal(bOwn.data.viewer.zones[0].httpRequestsAdaptiveGroups[0].count, 1);
  const bReadsA = await graphql(QUERY, { zoneTag: zoneA, filter: range() }, asB);
  assert.equal(bReadsA.data, null);
  assert.match(bReadsA.errors[0].message, /not authorized for zone/);
});

test("a token without analytics_read, an unknown field and a bad time are refused with GraphQL's errors", async () => {
  const t = await p.api("POST", "/user/tokens", { name: "dns-only", permissions: ["dns_read"], account_id: p.accountId }, p.keyHeaders());
  const dnsOnly = { authorization: `Bearer ${t.body.result.value}` };
  const refused = await graphql(QUERY, { zoneTag: zoneA, filter: range() }, dnsOnly);
  assert.match(refused.errors[0].message, /needs analytics_read/);
  const unknown = await graphql(`{ viewer { zones(filter: {zoneTag: "${zoneA}"}) { httpRequestsAdaptiveGroups(limit: 1) { dimensions { clientIP } } } } }`, {});
  assert.equal(unknown.data, null);
  assert.match(unknown.errors[0].message, /Cannot query field "clientIP"/);
  const badTime = await graphql(QUERY, { zoneTag: zoneA, filter: { datetime_geq: "yesterday" } });
  assert.match(badTime.errors[0].message, /filter.datetime_geq: "yesterday" is not a time/);
  const notSelected = await graphql(
    `{ viewer { zones(filter: {zoneTag: "${zoneA}"}) { httpRequestsAdaptiveGroups(limit: 1, orderBy: [date_DESC]) { count } } } }`,
    {},
  );
  assert.match(notSelected.errors[0].message, /orders by date, which the query does not select/);
});

test("described as a grouped dataset, it takes the filters and orders every grouped dataset has: _in, date, sum_ orders", async () => {
  // The requests of the first test are in the rollups by now (it waited for them).
  const today = new Date().toISOString().slice(0, 10);
  const r = await graphql(
    `
      query ($zoneTag: String, $filter: ZoneHttpRequestsAdaptiveGroupsFilter_InputObject) {
        viewer {
          zones(filter: { zoneTag: $zoneTag }) {
            httpRequestsAdaptiveGroups(limit: 10, filter: $filter, orderBy: [sum_edgeResponseBytes_DESC]) {
              count
              sum {
                edgeResponseBytes
              }
              dimensions {
                clientRequestHTTPHost
                date
              }
            }
          }
        }
      }
    `,
    {
      zoneTag: zoneA,
      filter: { date_geq: today, clientRequestHTTPHost_in: ["www.traffic-a.example", "nothing.traffic-a.example"], edgeResponseStatus_neq: 500 },
    },
  );
  assert.equal(r.errors, null, JSON.stringify(r.errors));
  const groups = r.data.viewer.zones[0].httpRequestsAdaptiveGroups as {
    count: number;
    sum: { edgeResponseBytes: number };
    dimensions: { clientRequestHTTPHost: string; date: string };
  }[];
  // Around midnight the requests may be yesterday's: then none are today's.
  if (groups.length === 0) return;
  assert.deepEqual(
    groups.map((g) => g.dimensions.clientRequestHTTPHost),
    ["www.traffic-a.example", "nothing.traffic-a.example"],
    "ordered by bytes, most first",
  );
  assert.ok(groups[0].sum.edgeResponseBytes >= groups[1].sum.edgeResponseBytes);
  assert.equal(groups[0].dimensions.date, today);
  const none = await graphql(
    `{ viewer { zones(filter: {zoneTag: "${zoneA}"}) { httpRequestsAdaptiveGroups(limit: 10, filter: {clientRequestHTTPHost_in: []}) { count dimensions { clientRequestHTTPHost } } } } }`,
    {},
  );
  assert.deepEqual(none.data.viewer.zones[0].httpRequestsAdaptiveGroups, [], "an empty list matches nothing");
});
