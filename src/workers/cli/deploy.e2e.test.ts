import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { TestPlatform } from "../../core/testing/platform.js";
import { hit, startPlatform, withTempDir } from "../testing/helpers.js";

let p: TestPlatform;
before(async () => {
  p = await startPlatform();
});
after(async () => {
  await p?.dispose();
});

function inProject(files: Record<string, string>, fn: (dir: string) => Promise<void>): Promise<void> {
  return withTempDir("deploy-config-", async (dir) => {
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
    await fn(dir);
  });
}

const WORKER = `export default { fetch() { return new Response("hi"); } };\n`;

test("deploy refuses a config with sections this platform does not have, naming each, and uploads nothing", async () => {
  const toml = `name = "refused"
main = "index.js"
compatibility_date = "2024-09-01"
route = "example.com/*"
[[d1_databases]]
binding = "DB"
database_name = "db"
database_id = "00000000-0000-0000-0000-000000000000"
[[durable_objects.bindings]]
name = "COUNTER"
class_name = "Counter"
[[migrations]]
tag = "v1"
new_classes = ["Counter"]
[[queues.producers]]
binding = "Q"
queue = "q"
[[queues.consumers]]
queue = "q"
[assets]
directory = "./public"
[[services]]
binding = "OTHER"
service = "other"
[ai]
binding = "AI"
[observability]
enabled = true
`;
  await inProject({ "wrangler.toml": toml, "index.js": WORKER }, async (dir) => {
    const r = await p.cli(["deploy"], { cwd: dir });
    assert.equal(r.code, 1, r.stdout);
    for (const section of [
      "route",
      "[[d1_databases]]",
      "[[durable_objects.bindings]]",
      "[[migrations]]",
      "[[queues.producers]], [[queues.consumers]]",
      "[assets]",
      "[[services]]",
      "[ai]",
      "[observability]",
    ]) {
      assert.ok(r.stderr.includes(`- ${section}: `), `${section} named in: ${r.stderr}`);
    }
    assert.match(r.stderr, /not supported by this platform yet, so nothing was deployed/);
    assert.doesNotMatch(r.stdout, /Uploaded/);
    const script = await p.api("GET", `/accounts/${p.accountId}/workers/services/refused`);
    assert.equal(script.status, 404, "nothing was uploaded");
  });
});

test("deploy honours the bundling keys and the build command, and accepts keys that change nothing here", async () => {
  const toml = `name = "supported"
main = "dist/index.js"
compatibility_date = "2024-09-01"
compatibility_flags = []
workers_dev = false
preview_urls = false
usage_model = "bundled"
minify = true
upload_source_maps = true
routes = []
[vars]
GREETING = "hello"
[define]
BUILT_FOR = '"edge"'
[build]
command = "mkdir -p dist && cp src.js dist/index.js"
[observability]
enabled = false
`;
  const src = `export default { fetch(_req, env) { return new Response(env.GREETING + " " + BUILT_FOR); } };\n`;
  await inProject({ "wrangler.toml": toml, "src.js": src }, async (dir) => {
    const r = await p.cli(["deploy"], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Running custom build: mkdir -p dist/);
    assert.equal((await hit(p, "supported", "/")).text, "hello edge", "define replaced BUILT_FOR and the built file was deployed");
  });
});

test("a failing build command stops the deploy", async () => {
  const toml = `name = "failing-build"\nmain = "index.js"\ncompatibility_date = "2024-09-01"\n[build]\ncommand = "exit 3"\n`;
  await inProject({ "wrangler.toml": toml, "index.js": WORKER }, async (dir) => {
    const r = await p.cli(["deploy"], { cwd: dir });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /The custom build command failed \(exit code 3\): exit 3/);
    assert.equal((await p.api("GET", `/accounts/${p.accountId}/workers/services/failing-build`)).status, 404);
  });
});
