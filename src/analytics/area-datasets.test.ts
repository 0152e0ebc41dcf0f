import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { request } from "undici";
import { eventually } from "../core/testing/eventually.js";
import { startTestPlatform, type TestPlatform } from "../core/testing/platform.js";
import { createAccount, hit, uploadScript } from "../workers/testing/helpers.js";
import { mintS3Credentials, s3Client } from "../r2/s3/testing/s3.js";
import { createRecord, dig, encodeQuery, tcpQuery } from "../dns/testing/helpers.js";
import { startMockProvider, type MockProvider } from "../ai-gateway/testing/mock-provider.js";
import { callGateway, chatBody } from "../ai-gateway/testing/helpers.js";

// The hosted datasets of the areas, on the real platform with real clients (undici POSTs to /graphql, the AWS SDK,
// dig, a Worker's R2 binding): workersInvocationsAdaptive, r2OperationsAdaptiveGroups, dnsAnalyticsAdaptiveGroups
// (answered by two UDP answering processes) and aiGatewayRequestsAdaptiveGroups, each for its own account only.
let p: TestPlatform;
let mock: MockProvider;
let accountB: string;
let asB: Record<string, string>;
let dnsPort: number;
let zoneA: string;

const graphql = async (query: string, variables: Record<string, unknown> = {}, headers: Record<string, string> = p.headers()) => {
  const res = await request(`${p.apiUrl}/graphql`, {
    method: "POST",
    headers: { ...headers, "content-type": "application/json" },
    body: JSON.stringify({ query, variables }),
  });
  assert.equal(res.statusCode, 200);
  return (await res.body.json()) as any;
};
const lastHour = () => ({ datetime_geq: new Date(Date.now() - 3_600_000).toISOString(), datetime_leq: new Date(Date.now() + 60_000).toISOString() });
/** The rows of one account dataset, once `ready` holds for them (rollups are written every 10 s). */
async function rowsOf(field: string, selection: string, ready: (rows: any[]) => boolean, account = p.accountId, headers = p.headers()): Promise<any[]> {
  let rows: any[] = [];
  await eventually(
    async () => {
      const r = await graphql(
        `query ($a: String, $f: ${typeName(field)}Filter_InputObject) { viewer { accounts(filter: { accountTag: $a }) { ${field}(limit: 100, filter: $f) { ${selection} } } } }`,
        { a: account, f: lastHour() },
        headers,
      );
      assert.equal(r.errors, null, JSON.stringify(r.errors));
      rows = r.data.viewer.accounts[0][field];
      return ready(rows);
    },
    `${field} in the rollups`,
    60_000,
  );
  return rows;
}
const typeName = (field: string) =>
  ({
    workersInvocationsAdaptive: "AccountWorkersInvocationsAdaptive",
    r2OperationsAdaptiveGroups: "AccountR2OperationsAdaptiveGroups",
    aiGatewayRequestsAdaptiveGroups: "AccountAiGatewayRequestsAdaptiveGroups",
  })[field]!;

before(async () => {
  mock = await startMockProvider();
  p = await startTestPlatform({ args: ["--dns-port", "0", "--dns-workers", "2", "--provider-base-url", `openai=${mock.url}`] });
  dnsPort = Number(p.endpoints.dns_udp.split(":").pop());
  accountB = await createAccount(p, "datasets-b");
  const tokenB = await p.api("POST", "/user/tokens", { name: "b-analytics", permissions: ["analytics_read"], account_id: accountB }, p.keyHeaders());
  assert.equal(tokenB.status, 200, JSON.stringify(tokenB.body));
  asB = { authorization: `Bearer ${tokenB.body.result.value}` };
  zoneA = (await p.api("POST", "/zones", { name: "datasets-a.example", account: { id: p.accountId } })).body.result.id;
});
after(async () => {
  await p?.stop();
  await mock?.close();
});

test("workersInvocationsAdaptive counts invocations by script and status, errors, subrequests and wall time, per account", async () => {
  const code = `export default { async fetch(req, env) {
    const path = new URL(req.url).pathname;
    if (path === "/throw") throw new Error("boom");
    if (path === "/sub") { await fetch("http://127.0.0.1:9/").catch(() => {}); await fetch("http://127.0.0.1:9/").catch(() => {}); }
    if (path === "/r2") { await env.B.put("k", "value"); const o = await env.B.get("k"); return new Response(await o.text()); }
    return new Response("ok");
  } }`;
  assert.equal((await p.api("POST", `/accounts/${p.accountId}/r2/buckets`, { name: "datasets-bound" })).status, 200);
  const up = await uploadScript(p, "counted", code, { bindings: [{ type: "r2_bucket", name: "B", bucket_name: "datasets-bound" }] });
  assert.equal(up.status, 200, JSON.stringify(up.body));
  const upB = await uploadScript(
    p,
    "counted-b",
    `export default { fetch() { return new Response("b") } }`,
    {},
    { accountId: accountB, headers: p.keyHeaders() },
  );
  assert.equal(upB.status, 200, JSON.stringify(upB.body));
  for (const path of ["/", "/", "/sub", "/r2"]) assert.equal((await hit(p, "counted", path)).status, 200);
  assert.equal((await hit(p, "counted", "/throw")).status, 500);
  assert.equal((await hit(p, "counted-b", "/")).status, 200);

  const rows = await rowsOf(
    "workersInvocationsAdaptive",
    "sum { requests errors subrequests wallTime } dimensions { scriptName status }",
    (rows) => rows.reduce((n, r) => n + r.sum.requests, 0) === 5 && rows.reduce((n, r) => n + r.sum.subrequests, 0) === 2,
  );
  const byStatus = Object.fromEntries(rows.map((r) => [r.dimensions.status, r.sum]));
  assert.deepEqual(
    rows.map((r) => r.dimensions.scriptName),
    rows.map(() => "counted"),
    "only account A's script",
  );
  assert.equal(byStatus.success.requests, 4);
  assert.equal(byStatus.success.errors, 0);
  assert.equal(byStatus.scriptThrewException.requests, 1);
  assert.equal(byStatus.scriptThrewException.errors, 1);
  assert.ok(byStatus.success.wallTime > 0, "wall time in microseconds");

  // Account B sees its own script only, and cannot read account A.
  const bRows = await rowsOf("workersInvocationsAdaptive", "sum { requests } dimensions { scriptName }", (r) => r.length === 1, accountB, asB);
  assert.deepEqual(bRows, [{ sum: { requests: 1 }, dimensions: { scriptName: "counted-b" } }]);
  const bReadsA = await graphql(
    `{ viewer { accounts(filter: {accountTag: "${p.accountId}"}) { workersInvocationsAdaptive(limit: 1) { sum { requests } } } } }`,
    {},
    asB,
  );
  assert.equal(bReadsA.data, null);
  assert.match(bReadsA.errors[0].message, /not authorized for account/);

  // CPU time and quantiles are not measured here. The hosted fields validate (a query written for hosted, like the
  // Workers metrics tutorial's, is not a syntax problem) and are refused by name, never answered 0.
  const hosted = `query ($a: String, $f: AccountWorkersInvocationsAdaptiveFilter_InputObject) { viewer { accounts(filter: { accountTag: $a }) {
    workersInvocationsAdaptive(limit: 100, filter: $f) { sum { subrequests requests errors } quantiles { cpuTimeP50 cpuTimeP99 wallTimeP50 } dimensions { datetime scriptName status } }
  } } }`;
  const quantiles = await graphql(hosted, { a: p.accountId, f: lastHour() });
  assert.equal(quantiles.data, null);
  assert.equal(quantiles.errors.length, 1);
  assert.match(quantiles.errors[0].message, /workersInvocationsAdaptive: quantiles are not measured here/);
  assert.deepEqual(quantiles.errors[0].path, ["viewer", "accounts", 0, "workersInvocationsAdaptive"]);
  const cpu = await graphql(
    `{ viewer { accounts(filter: {accountTag: "${p.accountId}"}) { workersInvocationsAdaptive(limit: 1) { sum { requests cpuTimeUs } } } } }`,
  );
  assert.equal(cpu.data, null);
  assert.match(cpu.errors[0].message, /sum.cpuTimeUs is not measured here: workerd reports CPU time only to a tail worker/);
  const unknown = await graphql(
    `{ viewer { accounts(filter: {accountTag: "${p.accountId}"}) { workersInvocationsAdaptive(limit: 1) { quantiles { cpuTimeP42 } } } } }`,
  );
  assert.match(unknown.errors[0].message, /Cannot query field "cpuTimeP42" on type "AccountWorkersInvocationsAdaptiveQuantiles"/);
});

test("r2OperationsAdaptiveGroups counts S3 API requests and binding calls by bucket, action and status", async () => {
  const s3 = await s3Client(p, await mintS3Credentials(p, ["r2_edit"]));
  const { CreateBucketCommand, PutObjectCommand, GetObjectCommand, HeadObjectCommand } = await import("@aws-sdk/client-s3");
  await s3.send(new CreateBucketCommand({ Bucket: "datasets-s3" }));
  await s3.send(new PutObjectCommand({ Bucket: "datasets-s3", Key: "a.txt", Body: "0123456789" }));
  const got = await s3.send(new GetObjectCommand({ Bucket: "datasets-s3", Key: "a.txt" }));
  assert.equal(await got.Body!.transformToString(), "0123456789");
  await assert.rejects(s3.send(new HeadObjectCommand({ Bucket: "datasets-s3", Key: "missing" })));

  const rows = await rowsOf(
    "r2OperationsAdaptiveGroups",
    "count sum { requests responseObjectSize } dimensions { bucketName actionType actionStatus responseStatusCode }",
    (rows) => rows.some((r) => r.dimensions.actionType === "HeadObject") && rows.some((r) => r.dimensions.bucketName === "datasets-bound"),
  );
  const of = (bucket: string, action: string) => rows.find((r) => r.dimensions.bucketName === bucket && r.dimensions.actionType === action);
  assert.deepEqual(of("datasets-s3", "GetObject"), {
    count: 1,
    sum: { requests: 1, responseObjectSize: 10 },
    dimensions: { bucketName: "datasets-s3", actionType: "GetObject", actionStatus: "success", responseStatusCode: 200 },
  });
  assert.equal(of("datasets-s3", "PutObject")?.sum.requests, 1);
  assert.equal(of("datasets-s3", "CreateBucket")?.sum.requests, 1);
  assert.deepEqual(of("datasets-s3", "HeadObject")?.dimensions, {
    bucketName: "datasets-s3",
    actionType: "HeadObject",
    actionStatus: "userError",
    responseStatusCode: 404,
  });
  // The Worker's binding calls (test above): a put and a get of 5 bytes.
  assert.equal(of("datasets-bound", "PutObject")?.sum.requests, 1);
  assert.equal(of("datasets-bound", "GetObject")?.sum.responseObjectSize, 5);
  // Filters: by action type, and a list of them.
  const filtered = await graphql(
    `
      query ($a: String, $f: AccountR2OperationsAdaptiveGroupsFilter_InputObject) {
        viewer {
          accounts(filter: { accountTag: $a }) {
            r2OperationsAdaptiveGroups(limit: 10, filter: $f, orderBy: [actionType_ASC]) {
              sum {
                requests
              }
              dimensions {
                actionType
              }
            }
          }
        }
      }
    `,
    { a: p.accountId, f: { ...lastHour(), bucketName: "datasets-s3", actionType_in: ["GetObject", "PutObject"] } },
  );
  assert.deepEqual(filtered.data.viewer.accounts[0].r2OperationsAdaptiveGroups, [
    { sum: { requests: 1 }, dimensions: { actionType: "GetObject" } },
    { sum: { requests: 1 }, dimensions: { actionType: "PutObject" } },
  ]);
  // Account B has none of them.
  const bRows = await graphql(
    `{ viewer { accounts(filter: {accountTag: "${accountB}"}) { r2OperationsAdaptiveGroups(limit: 10) { count dimensions { bucketName } } } } }`,
    {},
    asB,
  );
  assert.deepEqual(bRows.data.viewer.accounts[0].r2OperationsAdaptiveGroups, []);
});

test("dnsAnalyticsAdaptiveGroups counts what the answering processes and the main process answer, per zone", async () => {
  await createRecord(p, zoneA, { type: "A", name: "www", content: "198.51.100.10", ttl: 300 });
  // Two UDP answering processes answer these, TCP the main process.
  await dig(dnsPort, ["www.datasets-a.example", "A"]);
  await dig(dnsPort, ["WWW.datasets-a.example", "AAAA"]);
  await dig(dnsPort, ["nothing.datasets-a.example", "A"]);
  await tcpQuery(dnsPort, encodeQuery("www.datasets-a.example", "TXT"));
  // A name of no zone: nobody's.
  await dig(dnsPort, ["elsewhere.example", "A"]);

  let rows: any[] = [];
  await eventually(
    async () => {
      const r = await graphql(
        `
          query ($z: String, $f: ZoneDnsAnalyticsAdaptiveGroupsFilter_InputObject) {
            viewer {
              zones(filter: { zoneTag: $z }) {
                dnsAnalyticsAdaptiveGroups(limit: 100, filter: $f, orderBy: [queryName_ASC, queryType_ASC]) {
                  count
                  dimensions {
                    queryName
                    queryType
                    responseCode
                    protocol
                  }
                }
              }
            }
          }
        `,
        { z: zoneA, f: lastHour() },
      );
      assert.equal(r.errors, null, JSON.stringify(r.errors));
      rows = r.data.viewer.zones[0].dnsAnalyticsAdaptiveGroups;
      return rows.length === 4;
    },
    "the zone's queries in the rollups",
    60_000,
  );
  assert.deepEqual(rows, [
    { count: 1, dimensions: { queryName: "nothing.datasets-a.example", queryType: "A", responseCode: "NXDOMAIN", protocol: "udp" } },
    { count: 1, dimensions: { queryName: "www.datasets-a.example", queryType: "A", responseCode: "NOERROR", protocol: "udp" } },
    { count: 1, dimensions: { queryName: "www.datasets-a.example", queryType: "AAAA", responseCode: "NOERROR", protocol: "udp" } },
    { count: 1, dimensions: { queryName: "www.datasets-a.example", queryType: "TXT", responseCode: "NOERROR", protocol: "tcp" } },
  ]);
  const bReadsA = await graphql(`{ viewer { zones(filter: {zoneTag: "${zoneA}"}) { dnsAnalyticsAdaptiveGroups(limit: 1) { count } } } }`, {}, asB);
  assert.match(bReadsA.errors[0].message, /not authorized for zone/);
});

test("dnsAnalyticsAdaptiveGroups counts the repeats the answering processes' native cache answers, a zone change between them", async () => {
  await createRecord(p, zoneA, { type: "A", name: "again", content: "198.51.100.11", ttl: 300 });
  // The first of these is answered by the main process, the others from an answering process's cache (the native
  // thread's, when the addon is built). One try each, so a retry cannot be counted as another query.
  const ask = async () => assert.match(await dig(dnsPort, ["+tries=1", "+time=10", "again.datasets-a.example", "A"]), /status: NOERROR/);
  for (let i = 0; i < 4; i++) await ask();
  // A change to the zone empties the caches; what they answered before is still counted.
  await createRecord(p, zoneA, { type: "TXT", name: "again", content: "flush", ttl: 300 });
  for (let i = 0; i < 3; i++) await ask();
  let count = 0;
  await eventually(
    async () => {
      const r = await graphql(
        `
          query ($z: String, $f: ZoneDnsAnalyticsAdaptiveGroupsFilter_InputObject) {
            viewer {
              zones(filter: { zoneTag: $z }) {
                dnsAnalyticsAdaptiveGroups(limit: 10, filter: $f) {
                  count
                  dimensions {
                    queryType
                    responseCode
                  }
                }
              }
            }
          }
        `,
        { z: zoneA, f: { ...lastHour(), queryName: "again.datasets-a.example" } },
      );
      assert.equal(r.errors, null, JSON.stringify(r.errors));
      const rows = r.data.viewer.zones[0].dnsAnalyticsAdaptiveGroups;
      assert.ok(
        rows.every((row: any) => row.dimensions.queryType === "A" && row.dimensions.responseCode === "NOERROR"),
        JSON.stringify(rows),
      );
      count = rows.reduce((n: number, row: any) => n + row.count, 0);
      return count >= 7;
    },
    "the seven queries counted",
    60_000,
  );
  assert.equal(count, 7);
});

test("aiGatewayRequestsAdaptiveGroups counts requests, cache hits, errors, tokens and cost by gateway and model", async () => {
  const gw = await p.api("POST", `/accounts/${p.accountId}/ai-gateway/gateways`, {
    id: "counted",
    cache_ttl: 60,
    cache_invalidate_on_update: false,
    // Counted whether or not it keeps logs.
    collect_logs: false,
    rate_limiting_interval: 0,
    rate_limiting_limit: 0,
  });
  assert.equal(gw.status, 200, JSON.stringify(gw.body));
  const url = `${p.url}/v1/${p.accountId}/counted/openai/chat/completions`;
  const auth = { authorization: "Bearer sk-test" };
  assert.equal((await callGateway(url, { headers: auth, body: chatBody("one") })).status, 200);
  const again = await callGateway(url, { headers: auth, body: chatBody("one") });
  assert.equal(again.headers["cf-aig-cache-status"] ?? again.headers["gw-aig-cache-status"], "HIT");
  assert.equal((await callGateway(url, { headers: auth, body: chatBody("two", { stream: true, stream_options: { include_usage: true } }) })).status, 200);
  assert.equal((await callGateway(url, { headers: auth, body: "not json" })).status, 400);

  const rows = await rowsOf(
    "aiGatewayRequestsAdaptiveGroups",
    "count sum { cachedRequests erroredRequests cost cachedTokensIn cachedTokensOut uncachedTokensIn uncachedTokensOut } dimensions { gateway provider model }",
    (rows) => rows.reduce((n, r) => n + r.count, 0) === 4,
  );
  const model = rows.find((r) => r.dimensions.model === "gpt-4o-mini");
  assert.ok(model, JSON.stringify(rows));
  assert.equal(model.count, 3);
  assert.equal(model.sum.cachedRequests, 1);
  assert.equal(model.sum.uncachedTokensIn, 22, "the JSON answer and the stream, 11 prompt tokens each");
  assert.equal(model.sum.uncachedTokensOut, 14);
  assert.equal(model.sum.cachedTokensIn, 11, "what the cache hit saved");
  assert.ok(model.sum.cost > 0, "priced from the shipped price table");
  assert.deepEqual({ gateway: model.dimensions.gateway, provider: model.dimensions.provider }, { gateway: "counted", provider: "openai" });
  const errored = rows.find((r) => r !== model);
  assert.equal(errored.sum.erroredRequests, 1);

  // A token without analytics_read on the account is refused by name.
  const t = await p.api("POST", "/user/tokens", { name: "gw-only", permissions: ["ai_gateway_read"], account_id: p.accountId }, p.keyHeaders());
  const refused = await graphql(
    `{ viewer { accounts(filter: {accountTag: "${p.accountId}"}) { aiGatewayRequestsAdaptiveGroups(limit: 1) { count } } } }`,
    {},
    { authorization: `Bearer ${t.body.result.value}` },
  );
  assert.match(refused.errors[0].message, /needs analytics_read/);
});
