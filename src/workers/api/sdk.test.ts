import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import Cloudflare, { toFile } from "cloudflare";
import type { TestPlatform } from "../../core/testing/platform.js";
import { hit, startPlatform } from "../testing/helpers.js";

// The official TypeScript SDK (npm `cloudflare` 7) as a real client of the Workers API.
let p: TestPlatform;
let cf: Cloudflare;
before(async () => {
  p = await startPlatform();
  cf = new Cloudflare({ apiToken: p.token, baseURL: p.apiUrl, maxRetries: 0 });
});
after(() => p?.dispose());

test("the Cloudflare SDK uploads a module worker with bindings, manages its secrets, lists and deletes it", async () => {
  assert.equal((await p.api("POST", `/accounts/${p.accountId}/r2/buckets`, { name: "sdk-bucket" })).status, 200);
  const account_id = p.accountId;
  const code = `export default { async fetch(req, env) {
    await env.B.put("k", "v");
    return new Response([env.MODE, env.TOKEN ?? "-", await (await env.B.get("k")).text()].join(" "));
  } };`;
  const script = await cf.workers.scripts.update(
    "sdk-worker",
    {
      account_id,
      metadata: {
        main_module: "worker.js",
        compatibility_date: "2024-09-01",
        bindings: [
          { type: "plain_text", name: "MODE", text: "sdk" },
          { type: "r2_bucket", name: "B", bucket_name: "sdk-bucket" },
        ],
      },
      files: [await toFile(Buffer.from(code), "worker.js", { type: "application/javascript+module" })],
    },
    // No workaround: SDK 7.3 labels this multipart body `application/javascript` (without its boundary), as the hosted API takes it.
  );
  assert.equal(script.id, "sdk-worker");
  assert.equal((await hit(p, "sdk-worker", "/")).text, "sdk - v");

  await cf.workers.scripts.secrets.update("sdk-worker", { account_id, name: "TOKEN", text: "tok-123", type: "secret_text" });
  assert.equal((await hit(p, "sdk-worker", "/")).text, "sdk tok-123 v");
  const secrets = [];
  for await (const s of cf.workers.scripts.secrets.list("sdk-worker", { account_id })) secrets.push(s);
  assert.deepEqual(secrets, [{ name: "TOKEN", type: "secret_text" }]);
  const one = await cf.workers.scripts.secrets.get("TOKEN", { account_id, script_name: "sdk-worker" });
  assert.equal(one.name, "TOKEN");
  assert.ok(!JSON.stringify(one).includes("tok-123"));
  await cf.workers.scripts.secrets.delete("TOKEN", { account_id, script_name: "sdk-worker" });
  assert.equal((await hit(p, "sdk-worker", "/")).text, "sdk - v");

  const names = [];
  for await (const s of cf.workers.scripts.list({ account_id })) names.push(s.id);
  assert.deepEqual(names, ["sdk-worker"]);
  await cf.workers.scripts.delete("sdk-worker", { account_id });
  await assert.rejects(cf.workers.scripts.secrets.list("sdk-worker", { account_id }), (e: unknown) => e instanceof Cloudflare.NotFoundError);
});
