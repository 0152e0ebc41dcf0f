import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { request } from "undici";
import type { TestPlatform } from "../core/testing/platform.js";
import { createAccount, startPlatform } from "../workers/testing/helpers.js";

// POST /client/v4/graphql, the GraphQL Analytics API, with R2's storage dataset: wrangler's `r2 bucket info` query,
// per-account access, and GraphQL's errors for what the schema does not have.
let p: TestPlatform;
before(async () => {
  p = await startPlatform();
});
after(() => p?.dispose());

/** wrangler 4's query (r2 bucket info), word for word in its shape. */
const STORAGE_QUERY = `
  query getR2StorageMetrics($accountTag: String, $filter: R2StorageAdaptiveGroupsFilter_InputObject) {
    viewer {
      accounts(filter: { accountTag: $accountTag }) {
        r2StorageAdaptiveGroups(limit: 1, filter: $filter, orderBy: [datetime_DESC]) {
          max { objectCount payloadSize metadataSize }
          dimensions { datetime }
        }
      }
    }
  }`;

const graphql = async (body: unknown, headers: Record<string, string> = p.headers()) => {
  const res = await request(`${p.apiUrl}/graphql`, {
    method: "POST",
    headers: { ...headers, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.statusCode, body: (await res.body.json()) as any };
};

const storage = (accountTag: string, bucketName: string, headers?: Record<string, string>, range?: { from: Date; to: Date }) => {
  const to = range?.to ?? new Date(Date.now() + 60_000);
  const from = range?.from ?? new Date(to.getTime() - 86_400_000);
  return graphql(
    {
      query: STORAGE_QUERY,
      operationName: "getR2StorageMetrics",
      variables: { accountTag, filter: { datetime_geq: from.toISOString(), datetime_leq: to.toISOString(), bucketName } },
    },
    headers,
  );
};

const putObject = async (bucket: string, key: string, body: string, account = p.accountId, headers = p.headers()) => {
  const res = await request(`${p.apiUrl}/accounts/${account}/r2/buckets/${bucket}/objects/${key}`, { method: "PUT", headers, body });
  assert.equal(res.statusCode, 200, await res.body.text());
};

test("r2StorageAdaptiveGroups answers what a bucket holds now, for the caller's account only", async () => {
  assert.equal((await p.api("POST", `/accounts/${p.accountId}/r2/buckets`, { name: "counted" })).status, 200);
  await putObject("counted", "a.txt", "hello");
  await putObject("counted", "dir/b.txt", "x".repeat(1000));
  const res = await storage(p.accountId, "counted");
  assert.equal(res.status, 200);
  assert.equal(res.body.errors, null);
  const [group] = res.body.data.viewer.accounts[0].r2StorageAdaptiveGroups;
  assert.deepEqual([group.max.objectCount, group.max.payloadSize], [2, 1005]);
  assert.ok(group.max.metadataSize > 0);
  assert.match(group.dimensions.datetime, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);

  // A range that leaves out now has no groups (no history is kept); a bucket not there has none either.
  const past = await storage(p.accountId, "counted", undefined, { from: new Date("2020-01-01T00:00:00Z"), to: new Date("2020-01-02T00:00:00Z") });
  assert.deepEqual(past.body.data.viewer.accounts[0].r2StorageAdaptiveGroups, []);
  assert.deepEqual((await storage(p.accountId, "missing")).body.data.viewer.accounts[0].r2StorageAdaptiveGroups, []);

  // Another account's bucket of the same name is its own; neither sees the other's account.
  const other = await createAccount(p, "analytics-other");
  assert.equal((await p.api("POST", `/accounts/${other}/r2/buckets`, { name: "counted" }, p.keyHeaders())).status, 200);
  await putObject("counted", "only.txt", "1", other, p.keyHeaders());
  const theirs = await storage(other, "counted", p.keyHeaders());
  assert.equal(theirs.body.data.viewer.accounts[0].r2StorageAdaptiveGroups[0].max.objectCount, 1);
  const tokenB = (await p.api("POST", "/user/tokens", { name: "b-r2", permissions: ["r2_read"], account_id: other }, p.keyHeaders())).body.result.value;
  const crossing = await storage(p.accountId, "counted", { authorization: `Bearer ${tokenB}` });
  assert.equal(crossing.status, 200);
  assert.equal(crossing.body.data, null);
  assert.match(crossing.body.errors[0].message, /not authorized for account/);
});

test("a caller without r2_read on the account gets a GraphQL error for the dataset, not numbers", async () => {
  const kvOnly = (await p.api("POST", "/user/tokens", { name: "kv-only", permissions: ["kv_read"], account_id: p.accountId })).body.result.value;
  const res = await storage(p.accountId, "counted", { authorization: `Bearer ${kvOnly}` });
  assert.equal(res.status, 200);
  assert.match(res.body.errors[0].message, /needs r2_read/);
  assert.deepEqual(res.body.errors[0].path, ["viewer", "accounts", 0, "r2StorageAdaptiveGroups"]);
  const anonymous = await request(`${p.apiUrl}/graphql`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
  assert.equal(anonymous.statusCode, 400, "no credentials: the v4 API's own refusal");
  await anonymous.body.dump();
});

test("an unknown dataset or field, a syntax error, a bad variable or an oversized query is a GraphQL error; a body that is not a request is a 400", async () => {
  const q = (query: string, variables?: unknown) => graphql({ query, variables });
  const unknownDataset = await q(
    `{ viewer { accounts(filter: {accountTag: "${p.accountId}"}) { kvOperationsAdaptiveGroups(limit: 1) { sum { requests } } } } }`,
  );
  assert.equal(unknownDataset.status, 200);
  assert.equal(unknownDataset.body.data, null);
  assert.match(unknownDataset.body.errors[0].message, /Cannot query field "kvOperationsAdaptiveGroups" on type "Account"/);
  const unknownField = await q(`{ viewer { accounts(filter: {accountTag: "${p.accountId}"}) { r2StorageAdaptiveGroups(limit: 1) { max { nope } } } } }`);
  assert.match(unknownField.body.errors[0].message, /Cannot query field "nope"/);
  assert.match((await q("{ viewer { ")).body.errors[0].message, /Syntax Error/);
  const wrongTime = await graphql({
    query: STORAGE_QUERY,
    variables: { accountTag: p.accountId, filter: { datetime_geq: "yesterday" } },
  });
  assert.match(wrongTime.body.errors[0].message, /datetime_geq: "yesterday" is not a time/);
  const badLimit = await q(`{ viewer { accounts(filter: {accountTag: "${p.accountId}"}) { r2StorageAdaptiveGroups(limit: 0) { max { objectCount } } } } }`);
  assert.match(badLimit.body.errors[0].message, /limit: must be a whole number/);
  const noTag = await q(`{ viewer { accounts(filter: {}) { r2StorageAdaptiveGroups(limit: 1) { max { objectCount } } } } }`);
  assert.match(noTag.body.errors[0].message, /accountTag is required/);
  const aliases = Array.from({ length: 25 }, (_, i) => `g${i}: r2StorageAdaptiveGroups(limit: 1) { max { objectCount } }`).join(" ");
  const many = await q(`{ viewer { accounts(filter: {accountTag: "${p.accountId}"}) { ${aliases} } } }`);
  assert.match(many.body.errors.at(-1).message, /reads datasets more than 20 times/);
  const huge = await q(`{ viewer { accounts(filter: {accountTag: "${p.accountId}"}) { ${"__typename ".repeat(3000)} } } }`);
  assert.match(huge.body.errors[0].message, /Document contains more tha[nt] 2000 tokens/);
  for (const body of [{}, { query: 1 }, { query: "{ viewer { __typename } }", variables: [1] }]) {
    const refused = await graphql(body);
    assert.equal(refused.status, 400, JSON.stringify(body));
    assert.equal(refused.body.success, false);
  }
});
