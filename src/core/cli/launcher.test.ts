import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { CLI_PATH } from "../testing/platform.js";

const binDir = dirname(CLI_PATH);
const version = (JSON.parse(readFileSync(join(binDir, "..", "..", "package.json"), "utf8")) as { version: string }).version;

/** A copy of dist/bin/ beside it (so node_modules still resolves), with `cache` as its code cache. */
function launcherCopy(cache: Buffer | undefined): string {
  const dir = mkdtempSync(join(binDir, "..", "launcher-test-"));
  for (const f of ["edgecli.js", "edgecli.bundle.js", "package.json"]) copyFileSync(join(binDir, f), join(dir, f));
  if (cache) writeFileSync(join(dir, "edgecli.bundle.cache"), cache);
  return dir;
}

test("the bin ships a code cache that V8 accepts, and runs the bundle", () => {
  assert.ok(readFileSync(join(binDir, "edgecli.bundle.cache")).length > 10_000, "the build made a code cache");
  assert.equal(execFileSync(process.execPath, [CLI_PATH, "--version"], { encoding: "utf8" }).trim(), version);
});

test("the bin still works with no code cache, or one V8 rejects", () => {
  for (const cache of [undefined, Buffer.from("not a V8 code cache at all")]) {
    const dir = launcherCopy(cache);
    try {
      assert.equal(execFileSync(process.execPath, [join(dir, "edgecli.js"), "--version"], { encoding: "utf8" }).trim(), version);
      const help = execFileSync(process.execPath, [join(dir, "edgecli.js"), "kv", "--help"], { encoding: "utf8" });
      assert.match(help, /edgecli kv <command>/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
});
