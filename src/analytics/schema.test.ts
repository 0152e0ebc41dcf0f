import assert from "node:assert/strict";
import { test } from "node:test";
import type { AnalyticsDataset } from "./dataset.js";
import { AnalyticsSchema, QueryLimits } from "./schema.js";

// Rows are shaped to the query's selection outside graphql-js's per-field execution (schema.ts, shapeRows): the
// answer must be what graphql-js itself gives. A query that also asks for `__type` runs on graphql-js's own path,
// so each query below is run both ways and compared.
const rows = [
  { count: 3, sum: { bytes: 30, visits: 1 }, dimensions: { host: "a.example", status: 200 } },
  { count: 1, sum: { bytes: 7, visits: 0 }, dimensions: { host: "b.example", status: 404 } },
];
const dataset: AnalyticsDataset = {
  field: "trafficGroups",
  signature: "(limit: Int!, filter: TrafficFilter): [TrafficGroup!]!",
  typeDefs: `
    input TrafficFilter { host: String }
    type TrafficSum { bytes: uint64! visits: uint64! }
    type TrafficDimensions { host: String! status: Int! }
    type TrafficGroup { count: uint64! sum: TrafficSum! dimensions: TrafficDimensions! }
  `,
  permission: "analytics_read",
  async resolve(_scope, args) {
    const host = (args.filter as { host?: string } | undefined)?.host;
    return rows.filter((r) => host === undefined || r.dimensions.host === host).slice(0, Number(args.limit));
  },
};
const caller = { sees: (id: string) => id === "acct", can: () => true };
const schema = new AnalyticsSchema([dataset]);

async function bothWays(query: string, variables?: Record<string, unknown>) {
  const fast = await schema.run({ query, variables }, caller);
  const slowQuery = query.replace(/\{\s*viewer/, '{ __type(name: "TrafficGroup") { name } viewer');
  assert.notEqual(slowQuery, query);
  const slow = await schema.run({ query: slowQuery, variables }, caller);
  assert.equal(fast.errors, null, JSON.stringify(fast.errors));
  assert.equal(slow.errors, null, JSON.stringify(slow.errors));
  const { __type, ...slowData } = slow.data as Record<string, unknown>;
  assert.equal(JSON.stringify(__type), JSON.stringify({ name: "TrafficGroup" }));
  // Same keys in the same order, same values (JSON compares order, deepEqual the prototype-less objects' contents).
  assert.equal(JSON.stringify(fast.data), JSON.stringify(slowData));
  return JSON.parse(JSON.stringify(fast.data)) as any;
}

test("aliases, fragments, @skip/@include and __typename are answered as graphql-js answers them", async () => {
  const data = await bothWays(
    `query ($withSum: Boolean!, $skipHost: Boolean!) {
      viewer { accounts(filter: { accountTag: "acct" }) {
        first: trafficGroups(limit: 1) { n: count __typename ...Dims sum @include(if: $withSum) { bytes b2: bytes } }
        trafficGroups(limit: 5) {
          ... on TrafficGroup { count }
          dimensions { host @skip(if: $skipHost) status __proto__: host }
          sum @include(if: $withSum) { ...Sums }
        }
      } }
    }
    fragment Dims on TrafficGroup { dimensions { status } }
    fragment Sums on TrafficSum { visits bytes }`,
    { withSum: true, skipHost: true },
  );
  const account = data.viewer.accounts[0];
  assert.deepEqual(account.first, [{ n: 3, __typename: "TrafficGroup", dimensions: { status: 200 }, sum: { bytes: 30, b2: 30 } }]);
  assert.equal(account.trafficGroups.length, 2);
  assert.deepEqual(Object.keys(account.trafficGroups[1].dimensions), ["status", "__proto__"], "an alias named __proto__ is a key like any other");
  assert.equal(account.trafficGroups[1].dimensions.__proto__, "b.example");
  assert.deepEqual(account.trafficGroups[0].sum, { visits: 1, bytes: 30 });
  const none = await bothWays(`{ viewer { accounts(filter: { accountTag: "acct" }) { trafficGroups(limit: 5, filter: { host: "c.example" }) { count } } } }`);
  assert.deepEqual(none.viewer.accounts[0].trafficGroups, []);
});

test("a row missing a non-null value is the dataset's error on either path, never a row with a hole", async () => {
  const broken: AnalyticsDataset = { ...dataset, resolve: async () => [{ count: 1, sum: { bytes: 1 }, dimensions: { host: "a", status: 1 } }] };
  const faults: Error[] = [];
  const s = new AnalyticsSchema([broken], (err) => void faults.push(err));
  const fast = await s.run({ query: `{ viewer { accounts(filter: { accountTag: "acct" }) { trafficGroups(limit: 5) { sum { visits } } } } }` }, caller);
  assert.equal(fast.data, null);
  assert.match(JSON.stringify(fast.errors), /trafficGroups/);
  assert.match(JSON.stringify(fast.errors), /trafficGroups could not be read/);
  assert.equal(faults.length, 1, "the fault is told to the log");
  assert.match(faults[0].message, /non-null field has no value/);
});

test("dataset reads run one at a time, the event loop turning before each, and a query answers at most QueryLimits.rows rows", async () => {
  let calls = 0;
  let inFlight = 0;
  let mostInFlight = 0;
  let turned = true;
  const turnedBefore: boolean[] = [];
  const many: AnalyticsDataset = {
    ...dataset,
    async resolve(_scope, args) {
      calls++;
      // Whether an immediate queued by the previous read ran before this one started.
      turnedBefore.push(turned);
      turned = false;
      setImmediate(() => (turned = true));
      mostInFlight = Math.max(mostInFlight, ++inFlight);
      await new Promise((r) => setTimeout(r, 1));
      inFlight--;
      return Array.from({ length: Number(args.limit) }, (_, i) => ({ count: i, sum: { bytes: i, visits: 0 }, dimensions: { host: "a.example", status: 200 } }));
    },
  };
  const s = new AnalyticsSchema([many]);
  const reads = (n: number, limit: number) =>
    `{ viewer { accounts(filter: { accountTag: "acct" }) { ${Array.from({ length: n }, (_, i) => `r${i}: trafficGroups(limit: ${limit}) { count }`).join(" ")} } } }`;
  const within = await s.run({ query: reads(3, QueryLimits.rows / 3) }, caller);
  assert.equal(within.errors, null, JSON.stringify(within.errors));
  assert.equal(mostInFlight, 1, "one read at a time");
  assert.deepEqual(turnedBefore, [true, true, true], "the event loop turned before each read");
  calls = 0;
  const over = await s.run({ query: reads(5, QueryLimits.rows / 3) }, caller);
  // A dataset field's list is non-null (as hosted): its error takes the account's object with it, as any refusal does.
  assert.equal(over.data, null);
  const errors = over.errors as { message: string; path: string[] }[];
  assert.equal(errors[0].path.at(-1), "r3", "the read past the bound");
  assert.match(errors[0].message, new RegExp(`more than ${QueryLimits.rows} rows`));
  assert.equal(calls, 4, "the read after the one past the bound is refused without reading");
});
