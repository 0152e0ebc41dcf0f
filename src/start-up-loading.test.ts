import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { startTestPlatform, type TestPlatform } from "./core/testing/platform.js";

// What `edgecli serve` loads off its start's path (docs/benchmarks.md, "Resident memory at idle"): graphql-js with the
// analytics schema and the Cache Rules expression compiler load in the background once the start is done (before it
// only when rules are stored), and chevrotain from its single-file build, never from its package entry (a module graph
// over lodash-es, 5 MiB of heap). The real bin runs with NODE_DEBUG=module, which makes Node's module loader name
// every module it is asked for on stderr.
const loaded = (p: TestPlatform, what: string) => p.output().includes(`Module._load REQUEST ${what}`);

/** Waits (generously: the machine is shared) until `check` holds; the stderr of the child arrives on its own pipe. */
async function eventually(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 300 && !check(); i++) await new Promise((r) => setTimeout(r, 100));
  assert.ok(check(), what);
}

const RULES_PATH = (zoneId: string) => `/zones/${zoneId}/rulesets/phases/http_request_cache_settings/entrypoint`;
const RULES = {
  rules: [{ expression: 'http.request.uri.path.extension eq "html"', action: "set_cache_settings", action_parameters: { cache: true } }],
};

test("serve loads chevrotain's single file, never its package entry; the first GraphQL query and rules write work; stored rules apply at once after a restart", async () => {
  const stateDir = mkdtempSync(join(tmpdir(), "start-up-loading-"));
  const env = { NODE_DEBUG: "module" };
  try {
    let p = await startTestPlatform({ stateDir, env });
    let zoneId: string;
    try {
      // The debug output works (fastify is loaded at every start); the compiler loads in the background, from chevrotain.mjs.
      await eventually(() => loaded(p, "fastify "), "NODE_DEBUG=module names the packages serve loads");
      await eventually(() => /Module\._load REQUEST \S*chevrotain\.mjs/.test(p.output()), "the rules compiler loads in the background");
      await eventually(() => loaded(p, "graphql "), "graphql loads in the background");

      // The first GraphQL query: the schema is made then, and the query answers from the datasets.
      const query = `{ viewer { accounts(filter: { accountTag: "${p.accountId}" }) { r2StorageAdaptiveGroups(limit: 1) { dimensions { datetime } } } } }`;
      const answer = await p.api("POST", "/graphql", { query });
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      assert.equal(answer.body.errors, null, JSON.stringify(answer.body));
      assert.deepEqual(answer.body.data.viewer.accounts, [{ r2StorageAdaptiveGroups: [] }]);
      // A dataset's refusal keeps its words (grouped-dataset.ts throws DatasetRefusal, not graphql-js's error).
      const refused = await p.api("POST", "/graphql", { query: query.replace("limit: 1", "limit: 0") });
      assert.match(JSON.stringify(refused.body.errors), /limit: must be a whole number from 1 to 10000/);

      // The first rules write: a bad expression is refused with its position, a good one is stored and answered.
      const zone = await p.api("POST", "/zones", { name: "lazy-load.example", account: { id: p.accountId } });
      zoneId = zone.body.result.id;
      const bad = await p.api("PUT", RULES_PATH(zoneId), { rules: [{ ...RULES.rules[0], expression: "http.host eq" }] });
      assert.equal(bad.status, 400, JSON.stringify(bad.body));
      assert.match(bad.body.errors[0].message, /^Filter parsing error \(1:/);
      const put = await p.api("PUT", RULES_PATH(zoneId), RULES);
      assert.equal(put.status, 200, JSON.stringify(put.body));
      assert.equal(loaded(p, "chevrotain "), false, "chevrotain's package entry (its lodash-es module graph) was loaded");
    } finally {
      await p.stop();
    }

    // A start with stored rules compiles them before it is ready: the ruleset is there for its first request.
    p = await startTestPlatform({ stateDir, env, credentials: { accountId: p.accountId, email: p.email, apiKey: p.apiKey, token: p.token } });
    try {
      const got = await p.api("GET", RULES_PATH(zoneId));
      assert.equal(got.status, 200, JSON.stringify(got.body));
      assert.equal(got.body.result.rules[0].expression, RULES.rules[0].expression);
      assert.equal(loaded(p, "chevrotain "), false, "chevrotain's package entry was loaded");
    } finally {
      await p.stop();
    }
  } finally {
    rmSync(stateDir, { recursive: true, force: true });
  }
});
