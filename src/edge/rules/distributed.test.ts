import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";
import { eventually } from "../../core/testing/eventually.js";
import { startTwoNodes } from "../../core/testing/two-nodes.js";

const HANG_GUARD = { timeout: 300_000 };
const PHASE = "http_request_cache_settings";

test("on two nodes (PostgreSQL), a Cache Rules change through one node is what the other answers; concurrent changes both land", HANG_GUARD, async (t) => {
  const nodes = await startTwoNodes(t);
  if (!nodes) return;
  const [a, b] = nodes;
  const created = await a.api("POST", "/zones", { name: `rules${randomBytes(4).toString("hex")}.example`, account: { id: a.accountId } });
  assert.equal(created.status, 200, JSON.stringify(created.body));
  const zoneId = created.body.result.id as string;
  const entrypoint = `/zones/${zoneId}/rulesets/phases/${PHASE}/entrypoint`;
  const rule = (description: string) => ({
    expression: 'http.request.uri.path.extension eq "html"',
    action: "set_cache_settings",
    action_parameters: { cache: true },
    description,
  });

  const put = await a.api("PUT", entrypoint, { rules: [rule("first")] });
  assert.equal(put.status, 200, JSON.stringify(put.body));
  // Node B answers from its memory, which only the bus notice brings up to date.
  await eventually(async () => (await b.api("GET", entrypoint)).body.result?.version === "1", "the other node has the ruleset", 60_000);
  assert.deepEqual((await b.api("GET", entrypoint)).body.result, put.body.result);

  const rulesetId = put.body.result.id as string;
  const changed = await b.api("PATCH", `/zones/${zoneId}/rulesets/${rulesetId}/rules/${put.body.result.rules[0].id}`, { description: "changed on b" });
  assert.equal(changed.status, 200, JSON.stringify(changed.body));
  await eventually(async () => (await a.api("GET", entrypoint)).body.result?.rules[0]?.description === "changed on b", "the first node has the change", 60_000);

  // Rules added through both nodes at once: each lands (the store's compare-and-set retries the loser), none is lost.
  const adds = await Promise.all(
    Array.from({ length: 6 }, (_, i) => (i % 2 ? a : b).api("POST", `/zones/${zoneId}/rulesets/${rulesetId}/rules`, rule(`added ${i}`))),
  );
  for (const r of adds) assert.equal(r.status, 200, JSON.stringify(r.body));
  await eventually(
    async () => {
      const [onA, onB] = await Promise.all([a.api("GET", entrypoint), b.api("GET", entrypoint)]);
      return onA.body.result.rules.length === 7 && JSON.stringify(onA.body.result) === JSON.stringify(onB.body.result);
    },
    "both nodes have all seven rules",
    60_000,
  );

  const deleted = await b.api("DELETE", `/zones/${zoneId}/rulesets/${rulesetId}`);
  assert.equal(deleted.status, 204);
  await eventually(async () => (await a.api("GET", entrypoint)).status === 404, "the other node dropped the ruleset", 60_000);
});
