import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { TestPlatform } from "../../core/testing/platform.js";
import { hit, startPlatform } from "../testing/helpers.js";
import { withTempDir } from "../../core/testing/temp-dir.js";

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
tail_consumers = [{ service = "t" }]
[ai]
binding = "AI"
`;
  await inProject({ "wrangler.toml": toml, "index.js": WORKER }, async (dir) => {
    const r = await p.cli(["deploy"], { cwd: dir });
    assert.equal(r.code, 1, r.stdout);
    for (const section of ["[[tail_consumers]]", "[ai]"]) {
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
workers_dev = true
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

/** The keys of a KV namespace under `prefix`, through the API. */
async function kvKeys(namespaceId: string, prefix: string): Promise<string[]> {
  const r = await p.api("GET", `/accounts/${p.accountId}/storage/kv/namespaces/${namespaceId}/keys?prefix=${encodeURIComponent(prefix)}`);
  return (r.body.result as { name: string }[]).map((k) => k.name);
}

/** Polls until `check` holds; the deadline is a hang guard only (a minute's tick, on a busy machine). */
async function until(what: string, check: () => Promise<boolean>, ms = 200_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

test("cron triggers from the config run scheduled() on workerd each minute; removed triggers and deleted Workers stop", { timeout: 600_000 }, async () => {
  const ns = await p.api("POST", `/accounts/${p.accountId}/storage/kv/namespaces`, { title: "cron-ticks" });
  const id = ns.body.result.id as string;
  // Each run records its tick: the key names the Worker and controller.scheduledTime, the value is controller.cron.
  const worker = `export default {
  async scheduled(controller, env, ctx) {
    ctx.waitUntil(env.TICKS.put(env.WHO + ":" + controller.scheduledTime, controller.cron));
  },
  fetch() { return new Response("cron worker"); },
};\n`;
  const toml = (name: string, crons: string) =>
    `name = "${name}"\nmain = "index.js"\ncompatibility_date = "2024-09-01"\n[vars]\nWHO = "${name}"\n[[kv_namespaces]]\nbinding = "TICKS"\nid = "${id}"\n[triggers]\ncrons = ${crons}\n`;
  // The same, as a class extending WorkerEntrypoint: scheduled(controller) with this.env and this.ctx.
  const classWorker = `import { WorkerEntrypoint } from "cloudflare:workers";
export default class extends WorkerEntrypoint {
  async scheduled(controller) {
    this.ctx.waitUntil(this.env.TICKS.put(this.env.WHO + ":" + controller.scheduledTime, controller.cron));
  }
  fetch() { return new Response("cron class"); }
}\n`;
  const deploy = (name: string, crons: string) =>
    inProject({ "wrangler.toml": toml(name, crons), "index.js": name === "cron-class" ? classWorker : worker }, async (dir) => {
      const r = await p.cli(["deploy"], { cwd: dir });
      assert.equal(r.code, 0, r.stderr);
      if (crons !== "[]") assert.match(r.stdout, /schedule: \* \* \* \* \*/);
    });
  for (const name of ["cron-keeps", "cron-removed", "cron-deleted", "cron-class"]) await deploy(name, '["* * * * *"]');
  const schedules = await p.api("GET", `/accounts/${p.accountId}/workers/scripts/cron-keeps/schedules`);
  assert.deepEqual(
    schedules.body.result.schedules.map((s: { cron: string }) => s.cron),
    ["* * * * *"],
  );

  await until("each Worker's first tick", async () => {
    for (const name of ["cron-keeps", "cron-removed", "cron-deleted", "cron-class"]) if ((await kvKeys(id, `${name}:`)).length === 0) return false;
    return true;
  });
  const [first] = await kvKeys(id, "cron-keeps:");
  const scheduledTime = Number(first.split(":")[1]);
  assert.equal(scheduledTime % 60_000, 0, "scheduledTime is the minute's tick");
  const value = await p.api("GET", `/accounts/${p.accountId}/storage/kv/namespaces/${id}/values/${encodeURIComponent(first)}`);
  assert.equal(value.body, "* * * * *", "controller.cron is the trigger's expression");
  const [classTick] = await kvKeys(id, "cron-class:");
  const classValue = await p.api("GET", `/accounts/${p.accountId}/storage/kv/namespaces/${id}/values/${encodeURIComponent(classTick)}`);
  assert.equal(classValue.body, "* * * * *", "a WorkerEntrypoint class's scheduled() ran too");

  await deploy("cron-removed", "[]");
  assert.deepEqual((await p.api("GET", `/accounts/${p.accountId}/workers/scripts/cron-removed/schedules`)).body.result.schedules, []);
  assert.equal((await p.api("DELETE", `/accounts/${p.accountId}/workers/scripts/cron-deleted`)).status, 200);
  // Two more ticks of the Worker that keeps its trigger: the first may have been under way during the changes.
  const keeps = (await kvKeys(id, "cron-keeps:")).length;
  await until("a tick after the changes", async () => (await kvKeys(id, "cron-keeps:")).length >= keeps + 1);
  const removed = (await kvKeys(id, "cron-removed:")).length;
  const deleted = (await kvKeys(id, "cron-deleted:")).length;
  await until("a second tick after the changes", async () => (await kvKeys(id, "cron-keeps:")).length >= keeps + 2);
  assert.equal((await kvKeys(id, "cron-removed:")).length, removed, "crons = [] stopped its trigger");
  assert.equal((await kvKeys(id, "cron-deleted:")).length, deleted, "a deleted Worker's trigger stopped");
});

test("deploy refuses an invalid cron expression before uploading anything", async () => {
  const toml = `name = "bad-cron"\nmain = "index.js"\ncompatibility_date = "2024-09-01"\n[triggers]\ncrons = ["61 * * * *"]\n`;
  await inProject({ "wrangler.toml": toml, "index.js": WORKER }, async (dir) => {
    const r = await p.cli(["deploy"], { cwd: dir });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /Invalid cron expression "61 \* \* \* \*": .*minute/);
    assert.equal((await p.api("GET", `/accounts/${p.accountId}/workers/services/bad-cron`)).status, 404);
  });
});
