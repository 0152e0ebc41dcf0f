import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { TestPlatform } from "../../core/testing/platform.js";
import { hit, startPlatform, uploadVersion as uploadVersionOf } from "../testing/helpers.js";

let p: TestPlatform;
before(async () => {
  p = await startPlatform();
});
after(() => p?.dispose());

const scripts = () => `/accounts/${p.accountId}/workers/scripts`;
const say = (text: string) => `export default { fetch() { return new Response(${JSON.stringify(text)}); } };`;

const uploadVersion = (name: string, code: string, metadata: Record<string, unknown> = {}) => uploadVersionOf(p, name, code, metadata);

const deploy = (name: string, versionId: string, percentage = 100) =>
  p.api("POST", `${scripts()}/${name}/deployments`, { strategy: "percentage", versions: [{ version_id: versionId, percentage }] });

test("a version workerd refuses is a 400 with its error and is not kept; a first version goes live at once", async () => {
  const first = await uploadVersion("checked", say("first"), { annotations: { "workers/message": "hello" } });
  assert.equal(first.status, 200);
  assert.equal(first.body.messages[0].code, 10201, "the first version of a Worker is deployed at once, and the answer says so");
  assert.equal((await hit(p, "checked", "/")).text, "first");
  const broken = await uploadVersion("checked", "export default { fetch( { syntax error");
  assert.equal(broken.status, 400);
  assert.match(broken.body.errors[0].message, /The Worker failed to start/);
  const listed = await p.api("GET", `${scripts()}/checked/versions`);
  assert.equal(listed.body.result_info.total_count, 1, "the refused version is not kept");
  assert.equal(listed.body.result.items[0].annotations["workers/message"], "hello");
  assert.equal((await hit(p, "checked", "/")).text, "first");
  const secret = await uploadVersion("checked", say("x"), { bindings: [{ type: "secret_text", name: "S", text: "v" }] });
  assert.equal(secret.status, 400, "secret values go with a deploy here");
  const half = await deploy("checked", listed.body.result.items[0].id, 50);
  assert.equal(half.status, 400);
  assert.match(half.body.errors[0].message, /must add up to 100; these add up to 50/);
  const missing = await deploy("checked", "00000000-0000-4000-8000-000000000000");
  assert.equal(missing.status, 404);
});
