#!/usr/bin/env node
// Builds and tests the platform on another Node.js major (default 24), beside the checkout's own build.
// Usage: node scripts/test-other-node.mjs [--node <major>] [--all | test-path-substring ...]
//
// The checkout's dist/ and node_modules/ stay as they are (they belong to the Node that runs the main suite): the
// sources are copied to a directory of their own (under the OS temp dir, kept between runs), node_modules is
// hard-linked there, and the native parts are rebuilt in the copy for the other Node's ABI: better-sqlite3
// (its build/ is removed and made anew, so the linked files of the checkout are not touched) and the DNS
// server's UDP addon (scripts/build-native.mjs). Node's headers come with the binary (scripts/lib/node-binary.mjs),
// so nothing is downloaded but the Node package itself, once.
//
// Without test substrings it runs DEFAULT_TESTS: the tests that load a native part or the CLI bundle (the parts a
// Node upgrade breaks) plus one platform start-to-deploy test. CI runs this after the main suite (.ci/run).
// With --all it runs the whole suite, one area (top-level folder of src/) after another so that one area's failure
// does not hide the next one's, and ends with a table of each area's counts (npm run test:node22 / test:node24).
import { spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { copyFileSync, cpSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { defaultNodeCacheDir, nodeBinary, npmCli } from "./lib/node-binary.mjs";

export const DEFAULT_TESTS = [
  "sqlite-store.test", // every area's SQLite store: better-sqlite3's native module
  "dns/server/udp/", // the DNS server's native UDP addon and its answering processes
  "dns/server/server.test", // answers read through Node's own resolver (c-ares), whose results change across majors
  "core/cli/cli.test", // the CLI bundle and its V8 code cache (made by, and for, this Node)
  "core/cli/launcher.test",
  "core/errors/",
  "core/config.test",
  "d1/sql/", // D1's statement planning
  "d1/limits.test", // D1 executors start under a data-segment cap (RLIMIT_DATA), which Node 24's V8 reserves more of
  "workers/cli/deploy.e2e.test", // edgecli serve, then edgecli deploy of a Worker, served by workerd
  "edge/threads/edge-threads.test", // worker threads accepting on the edge port's descriptor (listen({ fd }) in a thread)
];

const root = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
const args = process.argv.slice(2);
let major = 24;
const nodeFlag = args.indexOf("--node");
if (nodeFlag !== -1) {
  major = Number(args[nodeFlag + 1]);
  args.splice(nodeFlag, 2);
}
const allFlag = args.indexOf("--all");
const wholeSuite = allFlag !== -1;
if (wholeSuite) args.splice(allFlag, 1);
if (wholeSuite && args.length > 0) {
  console.error("test-other-node: --all runs the whole suite; give either --all or test substrings");
  process.exit(2);
}
const tests = args.length > 0 ? args : DEFAULT_TESTS;
const say = (line) => console.error(`test-other-node: ${line}`);
const started = Date.now();

const node = nodeBinary(major, { log: say });
say(`Node ${node.version} at ${node.path}`);

const npm = npmCli();
const nodeGyp = join(dirname(dirname(npm)), "node_modules", "node-gyp", "bin", "node-gyp.js");
// Native builds use the other Node's own headers (include/node beside its bin/), never a download.
const env = { ...process.env, npm_execpath: npm, npm_config_nodedir: node.prefix, PATH: `${join(node.prefix, "bin")}:${process.env.PATH}` };
const copy = join(tmpdir(), `edge-platform-node${major}-${createHash("sha256").update(root).digest("hex").slice(0, 8)}`);
say(`copy of the checkout: ${copy}`);
mkdirSync(copy, { recursive: true });
for (const entry of [
  "src",
  "scripts",
  "docs",
  "examples",
  "package.json",
  "package-lock.json",
  "tsconfig.json",
  "README.md",
  ".dependency-cruiser.mjs",
  "dist",
]) {
  rmSync(join(copy, entry), { recursive: true, force: true });
  if (entry !== "dist" && existsSync(join(root, entry))) cpSync(join(root, entry), join(copy, entry), { recursive: true });
}
// node_modules: hard links (fast, no space), made anew each run so a changed dependency is seen.
rmSync(join(copy, "node_modules"), { recursive: true, force: true });
run("cp", ["-al", join(root, "node_modules"), join(copy, "node_modules")]);
// test-clients/ (wrangler 4 and the Node it runs on: src/core/testing/node-binary.ts) holds no native part built for
// the running Node, so the copy links to the checkout's own (installed or not: its tests say which).
rmSync(join(copy, "test-clients"), { recursive: true, force: true });
symlinkSync(join(root, "test-clients"), join(copy, "test-clients"));

const sqlite = join(copy, "node_modules", "better-sqlite3");
rmSync(join(sqlite, "build"), { recursive: true, force: true });
// Compiling SQLite takes minutes on a busy machine: the addon is kept in the cache per better-sqlite3 version and
// Node version, and copied from there on later runs.
const sqliteVersion = JSON.parse(readFileSync(join(sqlite, "package.json"), "utf8")).version;
const keptAddon = join(defaultNodeCacheDir(), `better-sqlite3-${sqliteVersion}-node-v${node.version}.node`);
const addon = join(sqlite, "build", "Release", "better_sqlite3.node");
if (existsSync(keptAddon)) {
  mkdirSync(dirname(addon), { recursive: true });
  copyFileSync(keptAddon, addon);
  say(`better-sqlite3 ${sqliteVersion}: the addon built earlier for Node ${node.version} (${keptAddon})`);
} else {
  step("better-sqlite3 for this Node", node.path, [nodeGyp, "rebuild", "--release", `--nodedir=${node.prefix}`, "--jobs", "max", "--loglevel", "warn"], sqlite);
  copyFileSync(addon, keptAddon);
}
step("tsc", node.path, [join(copy, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.json"]);
step("assets", node.path, ["scripts/copy-assets.mjs"]);
step("native DNS addon", node.path, ["scripts/build-native.mjs"]);
if (!existsSync(join(copy, "dist", "native", "dns_udp_fast.node"))) fail("the native DNS addon did not build for this Node (see above)");
step("CLI bundle", node.path, ["scripts/bundle-cli.mjs"]);
if (wholeSuite) {
  say(`built in ${Math.round((Date.now() - started) / 1000)} s; running the whole suite, one area at a time`);
  const results = [];
  for (const [area, files] of suiteByArea(join(copy, "dist"))) {
    say(`${area}: ${files.length} test files`);
    const t = Date.now();
    const counts = await runTests(files);
    results.push({ area, ...counts, seconds: Math.round((Date.now() - t) / 1000) });
    say(`${area}: ${counts.pass} passed, ${counts.fail} failed, ${counts.skipped} skipped${counts.exit === 0 ? "" : ` (exit ${counts.exit})`}`);
  }
  say(`whole suite on Node ${node.version}, by area:`);
  for (const r of results)
    say(
      `  ${r.area.padEnd(12)} ${String(r.pass).padStart(5)} passed ${String(r.fail).padStart(4)} failed ${String(r.skipped).padStart(4)} skipped  ${r.seconds} s`,
    );
  const failed = results.filter((r) => r.fail > 0 || r.exit !== 0);
  const total = (key) => results.reduce((sum, r) => sum + r[key], 0);
  console.log(`${total("pass")} passed, ${total("fail")} failed, ${total("skipped")} skipped`);
  if (failed.length > 0) fail(`failures in ${failed.map((r) => r.area).join(", ")}`);
  say(`Node ${node.version}: the whole suite passed in ${Math.round((Date.now() - started) / 1000)} s`);
} else {
  say(`built in ${Math.round((Date.now() - started) / 1000)} s; running ${tests.join(", ")}`);
  step("tests", node.path, ["scripts/run-tests.mjs", ...tests]);
  say(`Node ${node.version}: passed in ${Math.round((Date.now() - started) / 1000)} s`);
}

/** The compiled test files grouped by area: each top-level folder of dist/, and "(top level)" for files beside them. */
function suiteByArea(dist) {
  const areas = new Map();
  (function walk(dir) {
    for (const name of readdirSync(dir).sort()) {
      const p = join(dir, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (name.endsWith(".test.js")) {
        const path = relative(dist, p);
        const area = path.includes("/") ? path.split("/")[0] : "(top level)";
        if (!areas.has(area)) areas.set(area, []);
        areas.get(area).push(path);
      }
    }
  })(dist);
  return [...areas].sort(([a], [b]) => a.localeCompare(b));
}

/** Runs some test files (their paths under dist/, which run-tests matches as substrings) and counts the outcome. */
function runTests(files) {
  return new Promise((resolve) => {
    const child = spawn(node.path, ["scripts/run-tests.mjs", ...files], { cwd: copy, env, stdio: ["ignore", "pipe", "inherit"] });
    let tail = "";
    child.stdout.on("data", (chunk) => {
      process.stdout.write(chunk);
      tail = (tail + chunk.toString("utf8")).slice(-4096);
    });
    child.on("close", (code, signal) => {
      // The spec reporter closes with "ℹ pass N" and "ℹ fail N".
      const count = (word) => Number([...tail.matchAll(new RegExp(`^\\S*\\s*${word} (\\d+)$`, "gm"))].at(-1)?.[1] ?? 0);
      resolve({ pass: count("pass"), fail: count("fail"), skipped: count("skipped"), exit: code ?? (signal ? 1 : 0) });
    });
  });
}

function step(label, command, argv, cwd = copy) {
  const t = Date.now();
  run(command, argv, cwd);
  say(`${label}: ${Math.round((Date.now() - t) / 1000)} s`);
}

function run(command, argv, cwd = copy) {
  const r = spawnSync(command, argv, { cwd, env, stdio: "inherit" });
  if (r.status !== 0) fail(`${command} ${argv.join(" ")} failed (exit ${r.status ?? r.signal})`);
}

function fail(message) {
  say(`${message} — on Node ${node.version}`);
  process.exit(1);
}
