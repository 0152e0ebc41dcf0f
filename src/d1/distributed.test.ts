import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";
import { startTestPlatform } from "../core/testing/platform.js";
import { testDatabase } from "../core/testing/services.js";
import { uploadScript } from "../workers/testing/helpers.js";

const HANG_GUARD = { timeout: 240_000 };

// D1's files are one node's, so on PostgreSQL the platform refuses D1 whole, clearly, rather than serve a database
// that only one node can see.
test("with --database-url, every D1 route and a Worker's d1 binding are refused with a 400 naming the limitation", HANG_GUARD, async (t) => {
  const db = await testDatabase(t);
  if (!db) return;
  const node = await startTestPlatform({ args: ["--dns-port", "0", "--database-url", db.url], env: { EDGE_SECRETS_KEY: randomBytes(32).toString("base64") } });
  t.after(() => node.dispose());
  const base = `/accounts/${node.accountId}/d1/database`;
  for (const [method, path, body] of [
    ["GET", base, undefined],
    ["POST", base, { name: "x" }],
    ["POST", `${base}/00000000-0000-0000-0000-000000000000/query`, { sql: "SELECT 1" }],
  ] as const) {
    const r = await node.api(method, path, body);
    assert.equal(r.status, 400, `${method} ${path}`);
    assert.equal(r.body.errors[0].code, 7503);
    assert.match(r.body.errors[0].message, /D1 is not available when the platform runs on PostgreSQL \(--database-url\)/);
  }
  const up = await uploadScript(node, "d1-dist", `export default { fetch() { return new Response("x"); } };`, {
    bindings: [{ type: "d1", name: "DB", id: "00000000-0000-0000-0000-000000000000" }],
  });
  assert.equal(up.status, 400, JSON.stringify(up.body));
  assert.match(up.body.errors[0].message, /D1 is not available when the platform runs on PostgreSQL/);
});
