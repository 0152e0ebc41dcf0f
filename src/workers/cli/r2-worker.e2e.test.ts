import assert from "node:assert/strict";
import { cpSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";
import type { TestPlatform } from "../../core/testing/platform.js";
import { hit, startPlatform } from "../testing/helpers.js";

const EXAMPLE = fileURLToPath(new URL("../../../examples/r2-worker", import.meta.url));

let p: TestPlatform;
let project: string;
before(async () => {
  p = await startPlatform();
  project = mkdtempSync(join(tmpdir(), "r2-worker-"));
  cpSync(EXAMPLE, project, { recursive: true });
});
after(async () => {
  await p?.dispose();
  rmSync(project, { recursive: true, force: true });
});

const AUTH = "correct horse battery staple";

test("the spec's r2-worker: bucket create and list, secret put, deploy, then the five cases and more over HTTP", async () => {
  const create = await p.cli(["r2", "bucket", "create", "my-bucket"], { cwd: project });
  assert.equal(create.code, 0, create.stderr);
  const list = await p.cli(["r2", "bucket", "list"], { cwd: project });
  assert.equal(list.code, 0, list.stderr);
  assert.match(list.stdout, /my-bucket/);

  const secret = await p.cli(["secret", "put", "AUTH_KEY_SECRET"], { cwd: project, input: `${AUTH}\n` });
  assert.equal(secret.code, 0, secret.stderr);
  assert.match(secret.stdout, /Success! Uploaded secret AUTH_KEY_SECRET/);

  const deploy = await p.cli(["deploy"], { cwd: project });
  assert.equal(deploy.code, 0, deploy.stderr);
  const port = new URL(p.url).port;
  assert.ok(deploy.stdout.includes(`http://r2-worker.workers.localhost:${port}`), deploy.stdout);
  assert.match(deploy.stdout, /R2 Buckets:\n\s+- MY_BUCKET: my-bucket/);

  // What examples/r2-worker promises, case by case.
  const noHeader = await hit(p, "r2-worker", "/hello.txt", { method: "PUT", body: "hi" });
  assert.equal(noHeader.status, 403);
  assert.equal(noHeader.text, "Forbidden");
  const wrong = await hit(p, "r2-worker", "/hello.txt", { method: "PUT", body: "hi", headers: { "x-custom-auth-key": "guess" } });
  assert.equal(wrong.status, 403);
  const put = await hit(p, "r2-worker", "/hello.txt", {
    method: "PUT",
    body: "Hello from R2",
    headers: { "x-custom-auth-key": AUTH, "content-type": "text/plain;charset=utf-8", "cache-control": "max-age=60" },
  });
  assert.equal(put.status, 200);
  assert.equal(put.text, "Put hello.txt successfully!");
  const outside = await hit(p, "r2-worker", "/not-allowed.txt");
  assert.equal(outside.status, 403);
  assert.equal(outside.text, "Forbidden");
  const get = await hit(p, "r2-worker", "/hello.txt");
  assert.equal(get.status, 200);
  assert.equal(get.text, "Hello from R2");
  assert.equal(get.headers["content-type"], "text/plain;charset=utf-8");
  assert.equal(get.headers["cache-control"], "max-age=60");
  assert.match(String(get.headers.etag), /^"[0-9a-f]{32}"$/);

  // The check runs before any bucket operation: a refused PUT stores nothing.
  assert.equal((await hit(p, "r2-worker", "/cat-pic.jpg", { method: "PUT", body: "x" })).status, 403);
  const never = await hit(p, "r2-worker", "/cat-pic.jpg");
  assert.equal(never.status, 404);
  assert.equal(never.text, "Object Not Found");

  // DELETE, then 404; other methods 405 with Allow.
  assert.equal((await hit(p, "r2-worker", "/hello.txt", { method: "DELETE" })).status, 403);
  const del = await hit(p, "r2-worker", "/hello.txt", { method: "DELETE", headers: { "x-custom-auth-key": AUTH } });
  assert.equal(del.status, 200);
  assert.equal(del.text, "Deleted!");
  assert.equal((await hit(p, "r2-worker", "/hello.txt")).status, 404);
  const post = await hit(p, "r2-worker", "/hello.txt", { method: "POST", body: "x" });
  assert.equal(post.status, 405);
  assert.equal(post.headers.allow, "PUT, GET, DELETE");
});

test("deploy refuses a binding name that is not an identifier and a bucket that does not exist, clearly", async () => {
  const bad = mkdtempSync(join(tmpdir(), "bad-worker-"));
  try {
    cpSync(EXAMPLE, bad, { recursive: true });
    writeFileSync(
      join(bad, "edge.toml"),
      'name = "bad-worker"\nmain = "src/index.ts"\ncompatibility_date = "2024-09-01"\n[[r2_buckets]]\nbinding = "MY-BUCKET"\nbucket_name = "my-bucket"\n',
    );
    const r = await p.cli(["deploy"], { cwd: bad });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /"MY-BUCKET" is not a valid JavaScript identifier/);
    writeFileSync(
      join(bad, "edge.toml"),
      'name = "bad-worker"\nmain = "src/index.ts"\ncompatibility_date = "2024-09-01"\n[[r2_buckets]]\nbinding = "B"\nbucket_name = "no-such-bucket"\n',
    );
    const missing = await p.cli(["deploy"], { cwd: bad });
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /R2 bucket "no-such-bucket" does not exist/);
    writeFileSync(join(bad, "src", "index.ts"), "export default { fetch( {");
    const broken = await p.cli(["deploy"], { cwd: bad });
    assert.equal(broken.code, 1);
    assert.match(broken.stderr, /Could not bundle/);
  } finally {
    rmSync(bad, { recursive: true, force: true });
  }
});

test("deploy --env bundles TypeScript with its imports and binds that environment's vars and KV namespace", async () => {
  const dir = mkdtempSync(join(tmpdir(), "env-worker-"));
  try {
    const ns = await p.api("POST", `/accounts/${p.accountId}/storage/kv/namespaces`, { title: "staging-kv" });
    const id = ns.body.result.id as string;
    writeFileSync(
      join(dir, "edge.toml"),
      `name = "multi"\nmain = "src/index.ts"\ncompatibility_date = "2024-09-01"\n[vars]\nGREETING = "top"\n\n[env.staging.vars]\nGREETING = "staging"\n\n[[env.staging.kv_namespaces]]\nbinding = "KV"\nid = "${id}"\n`,
    );
    const { mkdirSync } = await import("node:fs");
    mkdirSync(join(dir, "src"));
    writeFileSync(join(dir, "src", "greet.ts"), "export const greet = (who: string): string => `${who}!`;\n");
    writeFileSync(
      join(dir, "src", "index.ts"),
      `import { greet } from "./greet";\ninterface Env { GREETING: string; KV: { get(k: string): Promise<string | null>; put(k: string, v: string): Promise<void> } }\n` +
        `export default { async fetch(_req: Request, env: Env): Promise<Response> { await env.KV.put("k", "from-kv"); return new Response(greet(env.GREETING) + " " + (await env.KV.get("k"))); } };\n`,
    );
    const r = await p.cli(["deploy", "--env", "staging"], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`KV Namespaces:\\n\\s+- KV: ${id}`));
    assert.match(r.stdout, /Vars:\n\s+- GREETING: "staging"/);
    assert.match(r.stdout, /http:\/\/multi-staging\.workers\.localhost:\d+/);
    assert.equal((await hit(p, "multi-staging", "/")).text, "staging! from-kv");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("deploy warns when the compatibility date is later than the runtime has, and the Worker runs", async () => {
  const dir = mkdtempSync(join(tmpdir(), "future-worker-"));
  try {
    writeFileSync(join(dir, "edge.toml"), `name = "future"\nmain = "index.js"\ncompatibility_date = "2099-01-01"\n`);
    writeFileSync(join(dir, "index.js"), `export default { fetch() { return new Response("still runs"); } };\n`);
    const r = await p.cli(["deploy"], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /WARNING.*compatibility_date 2099-01-01 is later than this platform's workerd supports; the Worker runs with \d{4}-\d{2}-\d{2}/);
    assert.equal((await hit(p, "future", "/")).text, "still runs");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
