import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { after, before, test } from "node:test";
import type { TestPlatform } from "../../core/testing/platform.js";
import { createAccount, hit, startPlatform, uploadScript, uploadVersion } from "../testing/helpers.js";
import { withTempDir } from "../../core/testing/temp-dir.js";
import { runWrangler } from "../testing/wrangler.js";
import { UPLOAD_SESSION_MANIFEST_CHARS } from "./assets.js";

/**
 * Static assets end to end: the real platform, `edgecli deploy` and wrangler 3 uploading `[assets]` with wrangler's
 * protocol, files served before the Worker by the edge with html_handling, ETags and the not-found rules, and
 * `env.ASSETS.fetch` from the Worker.
 */

let p: TestPlatform;
let other: string;
before(async () => {
  p = await startPlatform();
  other = await createAccount(p, "other");
});
after(async () => {
  await p?.dispose();
});

const WORKER = `export default {
  async fetch(req, env) {
    const url = new URL(req.url);
    if (url.pathname.startsWith("/via-binding/")) {
      const r = await env.ASSETS.fetch(new Request(new URL(url.pathname.slice("/via-binding".length), url), { headers: req.headers, redirect: "manual" }));
      return new Response("binding " + r.status + " " + (r.headers.get("location") ?? "") + " " + (await r.text()));
    }
    return new Response("worker " + req.method + " " + url.pathname);
  },
};
`;

function project(dir: string, files: Record<string, string | Buffer>): void {
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), content);
  }
}

const toml = (name: string, extra = "") =>
  `name = "${name}"\nmain = "index.js"\ncompatibility_date = "2024-09-01"\n\n[assets]\ndirectory = "./public"\nbinding = "ASSETS"\n${extra}`;

const SITE = {
  "index.js": WORKER,
  "public/index.html": "<h1>home</h1>",
  "public/about.html": "<h1>about</h1>",
  "public/blog/index.html": "<h1>blog</h1>",
  "public/style.css": "body { color: red }",
  "public/data.bin": Buffer.from([0, 1, 2, 255]),
};

test("edgecli deploy uploads [assets]; the edge serves them before the Worker with html_handling, ETags and the SPA fallback; env.ASSETS.fetch reads them", async () => {
  await withTempDir("assets-site-", async (dir) => {
    project(dir, { ...SITE, "wrangler.toml": toml("site", 'not_found_handling = "single-page-application"\n') });
    const r = await p.cli(["deploy"], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Uploading 5 new or changed static assets \(of 5\)/);

    const home = await hit(p, "site", "/");
    assert.equal(home.status, 200);
    assert.equal(home.text, "<h1>home</h1>");
    assert.equal(home.headers["content-type"], "text/html; charset=utf-8");
    const etag = home.headers.etag as string;
    assert.match(etag, /^"[0-9a-f]{32}"$/);
    const again = await hit(p, "site", "/", { headers: { "if-none-match": etag } });
    assert.equal(again.status, 304);
    assert.equal(again.text, "");
    const head = await hit(p, "site", "/style.css", { method: "HEAD" });
    assert.equal(head.status, 200);
    assert.equal(head.headers["content-type"], "text/css; charset=utf-8");
    assert.equal(head.headers["content-length"], String("body { color: red }".length));
    assert.equal(head.text, "");
    const bin = await hit(p, "site", "/data.bin");
    assert.equal(bin.headers["content-type"], "application/octet-stream");

    // auto-trailing-slash: /about.html is served at /about, /blog/index.html at /blog/; other spellings redirect.
    assert.equal((await hit(p, "site", "/about")).text, "<h1>about</h1>");
    for (const [from, to] of [
      ["/about.html", "/about"],
      ["/about/", "/about"],
      ["/blog", "/blog/"],
      ["/blog/index.html", "/blog/"],
      ["/index.html?x=1", "/?x=1"],
    ]) {
      const redirect = await hit(p, "site", from);
      assert.equal(redirect.status, 307, from);
      assert.equal(redirect.headers.location, to, from);
    }
    assert.equal((await hit(p, "site", "/blog/")).text, "<h1>blog</h1>");

    // What matches no file goes to the Worker, and so does every other method; a navigation gets the SPA's page.
    assert.equal((await hit(p, "site", "/api/x")).text, "worker GET /api/x");
    assert.equal((await hit(p, "site", "/", { method: "POST", body: "x" })).text, "worker POST /");
    assert.equal((await hit(p, "site", "/..%2f..%2fetc/passwd")).text, "worker GET /..%2f..%2fetc/passwd");
    const spa = await hit(p, "site", "/app/deep/link", { headers: { "sec-fetch-mode": "navigate" } });
    assert.equal(spa.status, 200);
    assert.equal(spa.text, "<h1>home</h1>");

    // env.ASSETS.fetch: the same files and rules, and the not-found handling instead of the Worker.
    assert.equal((await hit(p, "site", "/via-binding/about")).text, "binding 200  <h1>about</h1>");
    assert.equal((await hit(p, "site", "/via-binding/about.html")).text, "binding 307 /about ");
    assert.equal((await hit(p, "site", "/via-binding/nowhere")).text, "binding 200  <h1>home</h1>");

    // A redeploy uploads only what changed and serves it.
    writeFileSync(join(dir, "public/about.html"), "<h1>about v2</h1>");
    const r2 = await p.cli(["deploy"], { cwd: dir });
    assert.equal(r2.code, 0, r2.stderr);
    assert.match(r2.stdout, /Uploading 1 new or changed static asset \(of 5\)/);
    assert.equal((await hit(p, "site", "/about")).text, "<h1>about v2</h1>");
    assert.notEqual((await hit(p, "site", "/about")).headers.etag, undefined);
  });
});

test("a Worker without a fetch handler answers not-found paths with the nearest 404.html", async () => {
  await withTempDir("assets-404-", async (dir) => {
    project(dir, {
      "index.js": "export default {};\n",
      "public/index.html": "home",
      "public/404.html": "top 404",
      "public/docs/404.html": "docs 404",
      "public/docs/a.html": "a",
      "wrangler.toml": `name = "static-only"\nmain = "index.js"\ncompatibility_date = "2024-09-01"\n[assets]\ndirectory = "./public"\nnot_found_handling = "404-page"\nhtml_handling = "drop-trailing-slash"\n`,
    });
    const r = await p.cli(["deploy"], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    const docs = await hit(p, "static-only", "/docs/missing");
    assert.equal(docs.status, 404);
    assert.equal(docs.text, "docs 404");
    const top = await hit(p, "static-only", "/nope/deeper");
    assert.equal(top.status, 404);
    assert.equal(top.text, "top 404");
    assert.equal((await hit(p, "static-only", "/docs/a")).text, "a");
    assert.equal((await hit(p, "static-only", "/docs/a/")).headers.location, "/docs/a");
  });
});

test("a Worker with static assets keeps one version: a version upload deploys at once (10201), a split or another version is a 400", async () => {
  await withTempDir("assets-versions-", async (dir) => {
    project(dir, { ...SITE, "wrangler.toml": toml("site-versions") });
    const r = await p.cli(["deploy"], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
  });
  const first = (await p.api("GET", `/accounts/${p.accountId}/workers/scripts/site-versions/deployments`)).body.result.deployments[0].versions[0].version_id;
  const second = await uploadVersion(p, "site-versions", `export default { fetch() { return new Response("second"); } };`, { keep_assets: true });
  assert.equal(second.status, 200, JSON.stringify(second.body));
  assert.equal(second.body.messages[0].code, 10201);
  assert.match(second.body.messages[0].message, /static assets/);
  assert.equal((await hit(p, "site-versions", "/about")).text, "<h1>about</h1>", "the files were kept");
  assert.equal((await hit(p, "site-versions", "/api")).text, "second");
  const deploy = (versions: { version_id: string; percentage: number }[]) =>
    p.api("POST", `/accounts/${p.accountId}/workers/scripts/site-versions/deployments`, { strategy: "percentage", versions });
  for (const versions of [
    [
      { version_id: first, percentage: 50 },
      { version_id: second.body.result.id, percentage: 50 },
    ],
    [{ version_id: first, percentage: 100 }],
  ]) {
    const refused = await deploy(versions);
    assert.equal(refused.status, 400, JSON.stringify(refused.body));
    assert.match(refused.body.errors[0].message, /static assets: here it keeps one version/);
  }
  assert.equal((await hit(p, "site-versions", "/api")).text, "second");
});

test("the upload protocol refuses traversal, wrong content, other accounts' tokens and incomplete sessions", async () => {
  const session = (manifest: unknown, account = p.accountId, headers = p.headers()) =>
    p.api("POST", `/accounts/${account}/workers/scripts/guarded/assets-upload-session`, { manifest }, headers);
  for (const bad of ["/../etc/passwd", "relative.txt", "/a//b", "/a/./b", "/a\\b"]) {
    const r = await session({ [bad]: { hash: "0".repeat(32), size: 1 } });
    assert.equal(r.status, 400, bad);
    assert.match(r.body.errors[0].message, /assets manifest: the path/);
  }
  const tooBig = await session({ "/big.bin": { hash: "0".repeat(32), size: 25 * 1024 * 1024 + 1 } });
  assert.equal(tooBig.status, 400);
  assert.match(tooBig.body.errors[0].message, /larger than the 25 MiB/);

  // A session of the other account: its token does not upload into this account, nor deploy a Worker here.
  const hash = "0123456789abcdef0123456789abcdef";
  const theirs = await session({ "/x.txt": { hash, size: 5 } }, other, p.keyHeaders());
  assert.equal(theirs.status, 200, JSON.stringify(theirs.body));
  const form = new FormData();
  form.append(hash, new Blob([Buffer.from("hello").toString("base64")], { type: "text/plain" }), hash);
  const upload = async (account: string, token: string) => {
    const encoded = new Response(form);
    const res = await fetch(`${p.apiUrl}/accounts/${account}/workers/assets/upload?base64=true`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": encoded.headers.get("content-type")! },
      body: Buffer.from(await encoded.arrayBuffer()),
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  assert.equal((await upload(p.accountId, theirs.body.result.jwt)).status, 401);
  assert.equal((await upload(p.accountId, "not-a-token")).status, 401);
  // The content does not have the hash the manifest gave.
  const wrong = await upload(other, theirs.body.result.jwt);
  assert.equal(wrong.status, 400);
  assert.match(wrong.body.errors[0].message, /does not have that hash/);

  const deploy = (jwt: string) => uploadScript(p, "guarded", `export default { fetch() { return new Response("x"); } };`, { assets: { jwt } });
  assert.equal((await deploy(theirs.body.result.jwt)).status, 401);
  const mine = await session({ "/x.txt": { hash, size: 5 } });
  const incomplete = await deploy(mine.body.result.jwt);
  assert.equal(incomplete.status, 400);
  assert.match(incomplete.body.errors[0].message, /1 file of the upload session's manifest was not uploaded/);
  assert.equal((await p.api("GET", `/accounts/${p.accountId}/workers/services/guarded`)).status, 404);
});

test("the manifests of upload sessions in progress are bounded per account: past the bound a 429, other accounts unaffected", async () => {
  // Sessions last an hour and each may announce 20,000 files: without a bound one account could fill the database
  // (and the memory of the asset collection, which reads every live manifest) with manifests it never deploys.
  const crowded = await createAccount(p, "crowded");
  const manifest: Record<string, { hash: string; size: number }> = {};
  for (let i = 0; i < 20_000; i++) manifest[`/files/${String(i).padStart(5, "0")}.txt`] = { hash: i.toString(16).padStart(32, "0"), size: 1 };
  const start = (account: string, script: string) =>
    p.api("POST", `/accounts/${account}/workers/scripts/${script}/assets-upload-session`, { manifest }, p.keyHeaders());
  const perSession = JSON.stringify(manifest).length;
  const fits = Math.floor(UPLOAD_SESSION_MANIFEST_CHARS / perSession);
  for (let i = 0; i < fits; i++) {
    const r = await start(crowded, `site-${i}`);
    assert.equal(r.status, 200, `session ${i}: ${JSON.stringify(r.body).slice(0, 300)}`);
  }
  const refused = await start(crowded, "one-more");
  assert.equal(refused.status, 429, JSON.stringify(refused.body).slice(0, 300));
  assert.match(refused.body.errors[0].message, /upload sessions in progress/);
  assert.equal((await start(other, "elsewhere")).status, 200, "another account starts its sessions as before");
});

test("wrangler 3 deploys a config with [assets] unchanged", async () => {
  await withTempDir("assets-wrangler-", async (dir) => {
    // The first test stored SITE's files in this account already: only the new one is uploaded (wrangler hashes as edgecli does).
    project(dir, { ...SITE, "public/notes.txt": "wrangler's own", "wrangler.toml": toml("by-wrangler") });
    const r = await runWrangler(p, ["deploy"], { cwd: dir });
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    assert.match(r.stdout, /Uploaded 1 file \(5 already uploaded\)/);
    assert.equal((await hit(p, "by-wrangler", "/notes.txt")).text, "wrangler's own");
    assert.equal((await hit(p, "by-wrangler", "/about")).text, "<h1>about</h1>");
    assert.equal((await hit(p, "by-wrangler", "/style.css")).headers["content-type"], "text/css; charset=utf-8");
    assert.equal((await hit(p, "by-wrangler", "/via-binding/blog")).text, "binding 307 /blog/ ");
    assert.equal((await hit(p, "by-wrangler", "/nothing")).text, "worker GET /nothing");
  });
});

const assetsOnlyToml = (name: string, extra = "") => `name = "${name}"\ncompatibility_date = "2024-09-01"\n\n[assets]\ndirectory = "./public"\n${extra}`;

test("an assets-only config (no main) deploys with edgecli and with wrangler 3: files served, other paths a 404", async () => {
  await withTempDir("assets-only-", async (dir) => {
    project(dir, { "public/index.html": "<h1>only files</h1>", "public/404.html": "<h1>lost</h1>", "wrangler.toml": assetsOnlyToml("only-files") });
    const r = await p.cli(["deploy"], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    assert.equal((await hit(p, "only-files", "/")).text, "<h1>only files</h1>");
    const missing = await hit(p, "only-files", "/nothing");
    assert.equal(missing.status, 404);
    // Nothing but files to answer with: other methods are a 405.
    const posted = await hit(p, "only-files", "/", { method: "POST", body: "x".repeat(100_000) });
    assert.equal(posted.status, 405);
    assert.equal(posted.headers.allow, "GET, HEAD");

    // not_found_handling still applies before the 404 of the assets-only Worker.
    writeFileSync(join(dir, "wrangler.toml"), assetsOnlyToml("only-files", 'not_found_handling = "404-page"\n'));
    assert.equal((await p.cli(["deploy"], { cwd: dir })).code, 0);
    const page = await hit(p, "only-files", "/nothing");
    assert.equal(page.status, 404);
    assert.equal(page.text, "<h1>lost</h1>");

    writeFileSync(join(dir, "wrangler.toml"), assetsOnlyToml("only-files-by-wrangler"));
    const w = await runWrangler(p, ["deploy"], { cwd: dir });
    assert.equal(w.code, 0, `${w.stdout}\n${w.stderr}`);
    assert.equal((await hit(p, "only-files-by-wrangler", "/")).text, "<h1>only files</h1>");
    assert.equal((await hit(p, "only-files-by-wrangler", "/nothing")).status, 404);
  });
});

test("without main, an assets binding (no code to use it) and a config without [assets] are refused before any upload", async () => {
  await withTempDir("assets-only-refused-", async (dir) => {
    project(dir, { "public/index.html": "x", "wrangler.toml": assetsOnlyToml("only-bound", 'binding = "ASSETS"\n') });
    const bound = await p.cli(["deploy"], { cwd: dir });
    assert.equal(bound.code, 1);
    assert.match(bound.stderr, /assets-only Worker \(no "main"\) has no code to use assets\.binding "ASSETS"/);
    writeFileSync(join(dir, "wrangler.toml"), `name = "only-nothing"\ncompatibility_date = "2024-09-01"\n`);
    const none = await p.cli(["deploy"], { cwd: dir });
    assert.equal(none.code, 1);
    assert.match(none.stderr, /Missing entry-point/);
    for (const name of ["only-bound", "only-nothing"])
      assert.equal((await p.api("GET", `/accounts/${p.accountId}/workers/services/${name}`)).status, 404, name);
  });
});
