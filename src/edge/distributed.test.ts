import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";
import { request } from "undici";
import { startTwoNodes } from "../core/testing/two-nodes.js";
import { eventually } from "../core/testing/eventually.js";
import { loopbackBlock, startOrigin } from "./testing/origins.js";

const HANG_GUARD = { timeout: 300_000 };

test("on two nodes (PostgreSQL), both proxy a name, and a setting changed through one is obeyed by the other", HANG_GUARD, async (t) => {
  const address = loopbackBlock()(1);
  const origin = await startOrigin(t, { address, name: "cluster" });
  const nodes = await startTwoNodes(t, ["--origin-allow", "127.0.0.0/8"]);
  if (!nodes) return;
  const [a, b] = nodes;
  const zone = `px${randomBytes(4).toString("hex")}.example`;
  const created = await a.api("POST", "/zones", { name: zone, account: { id: a.accountId } });
  assert.equal(created.status, 200, JSON.stringify(created.body));
  const zoneId = created.body.result.id as string;
  const record = await a.api("POST", `/zones/${zoneId}/dns_records`, { type: "A", name: "www", content: address, proxied: true });
  assert.equal(record.status, 200, JSON.stringify(record.body));
  const at = async (node: typeof a) => {
    const res = await request(`${node.url}/p`, { headers: { host: `www.${zone}` } });
    return { status: res.statusCode, location: res.headers.location, text: await res.body.text() };
  };
  await eventually(async () => (await at(b)).text === "origin cluster", "the other node forwards the name", 60_000);
  assert.equal((await at(a)).text, "origin cluster");

  const changed = await a.api("PATCH", `/zones/${zoneId}/settings/always_use_https`, { value: "on" });
  assert.equal(changed.status, 200, JSON.stringify(changed.body));
  await eventually(async () => (await at(b)).status === 301, "the other node obeys the setting", 60_000);
  assert.equal((await at(b)).location, `https://www.${zone}/p`);
  assert.equal((await b.api("GET", `/zones/${zoneId}/settings/always_use_https`)).body.result.value, "on");
  assert.ok(origin.seen.length >= 2);
});
