import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { BIN_NODE_FLAGS, CLI_PATH } from "../testing/platform.js";

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

test("the bin starts Node with a 4 MiB young generation and WebAssembly on the baseline compiler, and its code cache is made under those flags", () => {
  // The flags' reasons are in scripts/edgecli-launcher.cjs; a code cache made under other flags would be rejected.
  assert.deepEqual(BIN_NODE_FLAGS, ["--max-semi-space-size=4", "--liftoff-only"]);
  const probe = `const { readFileSync } = require("node:fs"); const { Script } = require("node:vm");
    const bundle = ${JSON.stringify(join(binDir, "edgecli.bundle.js"))};
    const s = new Script("(function (exports, require, module, __filename, __dirname) {" + readFileSync(bundle, "utf8") + "\\n})",
      { filename: bundle, cachedData: readFileSync(${JSON.stringify(join(binDir, "edgecli.bundle.cache"))}) });
    process.stdout.write(String(s.cachedDataRejected));`;
  assert.equal(execFileSync(process.execPath, [...BIN_NODE_FLAGS, "-e", probe], { encoding: "utf8" }), "false", "V8 accepts the cache under the bin's flags");
});

test("`edgecli serve` started through the bin itself runs with the bin's Node flags", async () => {
  const stateDir = mkdtempSync(join(tmpdir(), "edge-bin-flags-"));
  // The file itself, as a shell or npm's link runs it: its #! line starts Node (the one on PATH).
  const child = spawn(CLI_PATH, ["serve", "--port", "0", "--dns-port", "0", "--dns-workers", "0", "--metrics-port", "0", "--state-dir", stateDir], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  try {
    let output = "";
    await new Promise<void>((resolve, reject) => {
      const check = (d: Buffer) => {
        output += d.toString();
        if (output.includes("platform ready")) resolve();
      };
      child.stdout.on("data", check);
      child.stderr.on("data", check);
      child.once("exit", (code) => reject(new Error(`edgecli serve exited with ${code}:\n${output}`)));
    });
    const argv = readFileSync(`/proc/${child.pid}/cmdline`, "utf8").split("\0");
    assert.ok(argv.includes("--max-semi-space-size=4"), `the serving process runs with the flag: ${argv.join(" ")}`);
    assert.ok(argv.includes("--liftoff-only"), `the serving process runs with the flag: ${argv.join(" ")}`);
    assert.ok(argv.includes("serve"));
  } finally {
    const exited = new Promise((resolve) => child.once("exit", resolve));
    if (child.exitCode === null) child.kill("SIGTERM");
    await exited;
    rmSync(stateDir, { recursive: true, force: true });
  }
});
