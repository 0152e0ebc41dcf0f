import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { TestPlatform } from "../../core/testing/platform.js";
import { hit, startPlatform } from "../testing/helpers.js";
import { eventually } from "../../core/testing/eventually.js";
import { withTempDir } from "../../core/testing/temp-dir.js";
import { runWrangler, wrangler4Missing, wranglerSucceeded } from "../testing/wrangler.js";

// The latest wrangler 4 (test-clients/, on Node 22) against the Workers API: redeploys that inherit their bindings
// (`{"type": "inherit"}` with ?bindings_inherit=strict), script-settings tags, and `wrangler delete` without --force.
const skip = wrangler4Missing();
let p: TestPlatform;
before(async () => {
  if (!skip) p = await startPlatform(["--queue-poll-interval", "0.2"]);
});
after(async () => {
  await p?.dispose();
});

const ok = wranglerSucceeded;

const WORKER = `
export default {
  async fetch(req, env) {
    await env.OUT.send(new URL(req.url).searchParams.get("body") ?? "-", { contentType: "text" });
    await env.KV.put("last", "seen");
    return new Response("sent " + (await env.KV.get("last")) + " " + env.MODE);
  },
};
`;

const config = (kvId: string, mode: string) => `name = "w4-app"
main = "index.js"
compatibility_date = "2024-09-01"

[vars]
MODE = "${mode}"

[[queues.producers]]
binding = "OUT"
queue = "w4-jobs"

[[kv_namespaces]]
binding = "KV"
id = "${kvId}"

[env.staging]
vars = { MODE = "staging" }
queues.producers = [{ binding = "OUT", queue = "w4-jobs" }]
kv_namespaces = [{ binding = "KV", id = "${kvId}" }]
`;

test(
  "wrangler 4: deploy, then redeploy a Worker with a queue producer and a KV namespace (inherited bindings), tags, delete without --force",
  { skip },
  async () => {
    await withTempDir("wrangler4-deploy-", async (cwd) => {
      const wrangler = (...args: string[]) => runWrangler(p, args, { cwd, version: 4 });
      ok(await wrangler("queues", "create", "w4-jobs"));
      const kv = await p.api("POST", `/accounts/${p.accountId}/storage/kv/namespaces`, { title: "w4-kv" });
      const kvId = kv.body.result.id as string;
      writeFileSync(join(cwd, "index.js"), WORKER);
      writeFileSync(join(cwd, "wrangler.toml"), config(kvId, "one"));

      const first = ok(await wrangler("deploy", "--env="));
      assert.doesNotMatch(first.stdout + first.stderr, /Could not apply service and environment tags/);
      assert.equal((await hit(p, "w4-app", "/?body=a")).text, "sent seen one");

      // The redeploy sends the producer and the namespace as {"type": "inherit"}: they are taken from the live version.
      writeFileSync(join(cwd, "wrangler.toml"), config(kvId, "two"));
      const again = ok(await wrangler("deploy", "--env="));
      assert.match(again.stdout, /env\.OUT \(inherited\)\s+Queue/);
      assert.doesNotMatch(again.stdout + again.stderr, /Could not apply service and environment tags/);
      await eventually(async () => (await hit(p, "w4-app", "/?body=b")).text === "sent seen two", "the redeployed version serves");
      const settings = await p.api("GET", `/accounts/${p.accountId}/workers/scripts/w4-app/settings`);
      const bindings = (settings.body.result.bindings as { name: string; type: string }[]).map((b) => `${b.name}:${b.type}`).sort();
      assert.deepEqual(bindings, ["KV:kv_namespace", "MODE:plain_text", "OUT:queue"]);
      // wrangler groups a Worker's environments by the tags it stores: top-level name and environment.
      const tags = await p.api("GET", `/accounts/${p.accountId}/workers/scripts/w4-app/script-settings`);
      assert.deepEqual(tags.body.result.tags, ["cf:service=w4-app"]);

      ok(await wrangler("deploy", "--env", "staging"));
      assert.equal((await hit(p, "w4-app-staging", "/?body=c")).text, "sent seen staging");
      const staged = await p.api("GET", `/accounts/${p.accountId}/workers/scripts/w4-app-staging/script-settings`);
      assert.deepEqual(staged.body.result.tags, ["cf:service=w4-app", "cf:environment=staging"]);

      // Without --force, wrangler 4 reads the Worker's references and its tail producers first.
      const deleted = ok(await wrangler("delete", "--env", "staging"));
      assert.match(deleted.stdout, /Successfully deleted/);
      assert.equal((await p.api("GET", `/accounts/${p.accountId}/workers/scripts/w4-app-staging/settings`)).status, 404);
    });
  },
);

test("wrangler 4: whoami, secret put/list/delete", { skip }, async () => {
  await withTempDir("wrangler4-secret-", async (cwd) => {
    const wrangler = (args: string[], input?: string) => runWrangler(p, args, { cwd, version: 4, input });
    const who = ok(await wrangler(["whoami"]));
    assert.match(who.stdout, new RegExp(p.accountId));
    writeFileSync(join(cwd, "index.js"), `export default { fetch(_r, env) { return new Response(env.TOKEN ?? "-"); } };`);
    writeFileSync(join(cwd, "wrangler.toml"), `name = "w4-secret"\nmain = "index.js"\ncompatibility_date = "2024-09-01"\n`);
    ok(await wrangler(["deploy"]));
    ok(await wrangler(["secret", "put", "TOKEN"], "s3cret\n"));
    await eventually(async () => (await hit(p, "w4-secret", "/")).text === "s3cret", "the secret is live");
    assert.match(ok(await wrangler(["secret", "list"])).stdout, /"name": "TOKEN"/);
    ok(await wrangler(["secret", "delete", "TOKEN"]));
    await eventually(async () => (await hit(p, "w4-secret", "/")).text === "-", "the secret is gone");
  });
});
