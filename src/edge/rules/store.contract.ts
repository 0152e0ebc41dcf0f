import assert from "node:assert/strict";
import { storeContract } from "../../core/testing/contract.js";
import type { RulesetView } from "./ruleset.js";
import type { CacheRulesStore, StoredRuleset } from "./store.js";

const A = "a".repeat(32);
const B = "b".repeat(32);
const ruleset = (version: string, expression = 'http.host eq "a"'): RulesetView => ({
  id: "1".repeat(32),
  name: "default",
  description: "",
  kind: "zone",
  phase: "http_request_cache_settings",
  version,
  last_updated: "2026-01-01T00:00:00.000Z",
  rules: [
    {
      id: "2".repeat(32),
      version: "1",
      action: "set_cache_settings",
      action_parameters: { cache: true, edge_ttl: { mode: "override_origin", default: 60 } },
      expression,
      description: "",
      enabled: true,
      ref: "2".repeat(32),
      last_updated: "2026-01-01T00:00:00.000Z",
    },
  ],
});
const row = (zoneId: string, version: string, accountId = A, expression?: string): StoredRuleset => ({
  zoneId,
  accountId,
  ruleset: ruleset(version, expression),
});

export const describeCacheRulesStore = storeContract<CacheRulesStore>("CacheRulesStore", (it) => {
  it("a ruleset is kept per zone, read whole by zone and all together in zone order", async (store) => {
    assert.equal(await store.put(row("z2", "1", B), undefined), true);
    assert.equal(await store.put(row("z1", "1"), undefined), true);
    assert.deepEqual(await store.zone("z1"), row("z1", "1"));
    assert.deepEqual(await store.all(), [row("z1", "1"), row("z2", "1", B)]);
    assert.equal(await store.zone("nothing"), undefined);
  });

  it("put writes only over the version it read: a second writer of the same version loses, and nothing of it is kept", async (store) => {
    assert.equal(await store.put(row("z1", "1"), undefined), true);
    assert.equal(await store.put(row("z1", "1", A, 'http.host eq "lost"'), undefined), false, "a first ruleset, when there already is one");
    assert.equal(await store.put(row("z1", "2", A, 'http.host eq "b"'), "1"), true);
    assert.equal(await store.put(row("z1", "2", A, 'http.host eq "c"'), "1"), false, "over a version that is gone");
    assert.equal(await store.put(row("z9", "2"), "1"), false, "over a ruleset that does not exist");
    assert.deepEqual(await store.zone("z1"), row("z1", "2", A, 'http.host eq "b"'));
    assert.equal(await store.zone("z9"), undefined);
  });

  it("delete removes one zone's ruleset (at a version when given) and says whether there was one", async (store) => {
    await store.put(row("z1", "1"), undefined);
    await store.put(row("z2", "1", B), undefined);
    assert.equal(await store.delete("z1", "5"), false);
    assert.equal(await store.delete("z1", "1"), true);
    assert.equal(await store.delete("z1"), false);
    assert.equal(await store.delete("z2"), true);
    assert.deepEqual(await store.all(), []);
  });
});
