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
