import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";
import { request } from "undici";
import type { TestPlatform } from "../../core/testing/platform.js";
import { startTwoNodes } from "../../core/testing/two-nodes.js";
import { uploadScript } from "../testing/helpers.js";
import { eventually } from "../../core/testing/eventually.js";

const HANG_GUARD = { timeout: 300_000 };

async function at(node: TestPlatform, host: string, path: string): Promise<{ status: number; text: string }> {
  const res = await request(`${node.url}${path}`, { headers: { host } });
  return { status: res.statusCode, text: await res.body.text() };
}

test("on two nodes (PostgreSQL), a route or Custom Domain made through one node is served by the other, and its removal too", HANG_GUARD, async (t) => {
  const nodes = await startTwoNodes(t);
  if (!nodes) return;
  const [a, b] = nodes;
  const zone = `cl${randomBytes(4).toString("hex")}.example`;
  const created = await a.api("POST", "/zones", { name: zone, account: { id: a.accountId } });
  assert.equal(created.status, 200);
  assert.equal((await uploadScript(a, "cluster-routed", `export default { fetch: (r) => new Response("routed " + new URL(r.url).pathname) };`)).status, 200);
  const route = await a.api("POST", `/zones/${created.body.result.id}/workers/routes`, { pattern: `app.${zone}/*`, script: "cluster-routed" });
  assert.equal(route.status, 200, JSON.stringify(route.body));
  await eventually(async () => (await at(b, `app.${zone}`, "/x")).text === "routed /x", "the route served by the other node", 60_000);

  const domain = await b.api("PUT", `/accounts/${b.accountId}/workers/domains`, { hostname: `shop.${zone}`, service: "cluster-routed" });
  assert.equal(domain.status, 200, JSON.stringify(domain.body));
  await eventually(async () => (await at(a, `shop.${zone}`, "/y")).text === "routed /y", "the domain served by the first node", 60_000);
  // Its DNS record, made through the second node, is read-only on the first too (it has read the domain by now).
  const zoneRecords = `/zones/${created.body.result.id}/dns_records`;
  let record: { id: string; content: string; meta: { read_only?: boolean } } | undefined;
  await eventually(
    async () => {
      record = (await a.api("GET", `${zoneRecords}?name=shop.${zone}`)).body.result[0];
      return record?.meta.read_only === true;
    },
    "the domain's record listed read-only by the first node",
    60_000,
  );
  assert.equal(record?.content, "100::");
  const refused = await a.api("DELETE", `${zoneRecords}/${record?.id}`);
  assert.equal(refused.status, 400, JSON.stringify(refused.body));
  assert.equal(refused.body.errors[0].code, 1094);

  assert.equal((await b.api("DELETE", `/zones/${created.body.result.id}/workers/routes/${route.body.result.id}`)).status, 200);
  await eventually(async () => (await at(a, `app.${zone}`, "/x")).status === 404, "the removed route no longer served", 60_000);
  assert.equal((await b.api("DELETE", `/zones/${created.body.result.id}`)).status, 200);
  await eventually(async () => (await at(a, `shop.${zone}`, "/y")).status === 404, "the deleted zone's domain no longer served", 60_000);
});
