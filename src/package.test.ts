import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { promisify } from "node:util";

const root = new URL("..", import.meta.url).pathname;

test("the published package holds no tests, no store contracts and nothing from testing/ folders", async () => {
  // --ignore-scripts: `prepare` would rebuild dist/ while the suite runs from it.
  const { stdout } = await promisify(execFile)("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], { cwd: root, maxBuffer: 64 * 1024 * 1024 });
  const [pack] = JSON.parse(stdout) as { files: { path: string }[] }[];
  const files = pack.files.map((f) => f.path);
  assert.deepEqual(
    files.filter((f) => /\.test\.js(\.map)?$|\.contract\.js(\.map)?$|(^|\/)testing\//.test(f)),
    [],
  );
  for (const needed of ["dist/bin/edgecli.js", "dist/platform.js", "dist/core/http/app.js", "README.md", "package.json"]) {
    assert.ok(files.includes(needed), `${needed} is published`);
  }
});

test("`npm install -g .` puts a working edgecli on PATH, usable outside the checkout (README's one step)", async () => {
  const { mkdtempSync, rmSync } = await import("node:fs");
  const { tmpdir } = await import("node:os");
  const { join } = await import("node:path");
  const prefix = mkdtempSync(join(tmpdir(), "edgecli-prefix-"));
  const elsewhere = mkdtempSync(join(tmpdir(), "edgecli-elsewhere-"));
  try {
    // --ignore-scripts: `prepare` would rebuild dist/ while the suite runs from it (it is tested on its own below).
    await promisify(execFile)("npm", ["install", "-g", ".", "--prefix", prefix, "--ignore-scripts", "--no-audit", "--no-fund"], { cwd: root });
    const run = promisify(execFile);
    const version = await run(join(prefix, "bin", "edgecli"), ["--version"], {
      cwd: elsewhere,
      env: { ...process.env, PATH: `${join(prefix, "bin")}:${process.env.PATH}` },
    });
    assert.match(version.stdout, /^\d+\.\d+\.\d+\n$/);
    const help = await run("edgecli", ["kv", "--help"], { cwd: elsewhere, env: { ...process.env, PATH: `${join(prefix, "bin")}:${process.env.PATH}` } });
    assert.match(help.stdout, /edgecli kv namespace/);
  } finally {
    rmSync(prefix, { recursive: true, force: true });
    rmSync(elsewhere, { recursive: true, force: true });
  }
});

test("`prepare` (npm install, npm link, the first npx edgecli) keeps a current build and says so, instead of a silent rebuild", async () => {
  const { stderr } = await promisify(execFile)(process.execPath, ["scripts/prepare.mjs"], { cwd: root });
  assert.match(stderr, /dist\/ is up to date with the sources; not rebuilding/);
});
