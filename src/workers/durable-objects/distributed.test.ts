import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";
import { startTestPlatform, type TestPlatform } from "../../core/testing/platform.js";
import { awsEnv, testBucket, testDatabase } from "../../core/testing/services.js";
import { uploadScript } from "../testing/helpers.js";

const HANG_GUARD = { timeout: 180_000 };

test("on several nodes (--database-url) an upload using Durable Objects is refused with a 400 naming the limitation", HANG_GUARD, async (t) => {
  const db = await testDatabase(t);
  const bucket = db && (await testBucket(t));
  if (!db || !bucket) return;
  const env = { EDGE_SECRETS_KEY: randomBytes(32).toString("base64"), ...awsEnv(bucket.server) };
  const node: TestPlatform = await startTestPlatform({ args: ["--database-url", db.url, "--object-store-url", bucket.url, "--dns-port", "0"], env });
  t.after(() => node.dispose());
  const code = `import { DurableObject } from "cloudflare:workers"; export class Counter extends DurableObject {} export default { fetch() { return new Response("hi"); } };`;
  const bound = await uploadScript(node, "do-cluster", code, {
    bindings: [{ type: "durable_object_namespace", name: "COUNTER", class_name: "Counter" }],
    migrations: { new_tag: "v1", steps: [{ new_sqlite_classes: ["Counter"] }] },
  });
  assert.equal(bound.status, 400);
  assert.match(bound.body.errors[0].message, /Durable Objects are not available when the platform runs on several nodes/);
  const migrationOnly = await uploadScript(node, "do-cluster", code, { migrations: { new_tag: "v1", steps: [{ new_classes: ["Counter"] }] } });
  assert.equal(migrationOnly.status, 400);
  assert.equal((await node.api("GET", `/accounts/${node.accountId}/workers/services/do-cluster`)).status, 404, "nothing was deployed");
  assert.equal((await uploadScript(node, "do-cluster", code)).status, 200, "the same script without Durable Objects deploys");
});
