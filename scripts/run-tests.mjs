#!/usr/bin/env node
// Runs every compiled test file (dist/**/*.test.js) with Node's test runner.
// Usage: node scripts/run-tests.mjs [substring ...]  — only files whose path contains one of the substrings.
//
// When a selected test file uses the test services (dist/core/testing/services.js, directly or through the
// modules it imports), PostgreSQL and Ceph RGW are started once for the whole run (where installed), handed to
// the test processes as EDGE_TEST_* variables, and stopped afterwards: starting RGW takes seconds, too long
// to pay in each test process. Variables already set (servers of your own) are used as they are.
import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { spawn } from "node:child_process";

const root = new URL("../dist/", import.meta.url).pathname;
const servicesModule = join(root, "core/testing/services.js");
const filters = process.argv.slice(2);
const files = [];
(function walk(dir) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p);
    else if (name.endsWith(".test.js") && (filters.length === 0 || filters.some((f) => relative(root, p).includes(f)))) files.push(p);
  }
})(root);
files.sort();
if (files.length === 0) {
  console.error("no test files found under dist/ (did the build run?)");
  process.exit(1);
}

// Whether a compiled module imports the services module, following its relative static imports.
const importsServices = new Map();
function usesServices(file) {
  if (file === servicesModule) return true;
  if (importsServices.has(file)) return importsServices.get(file);
  importsServices.set(file, false); // import cycles end here
  const source = readFileSync(file, "utf8");
  const found = [...source.matchAll(/(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g)]
    .map((m) => resolve(dirname(file), m[1]))
    .some((dep) => existsSync(dep) && usesServices(dep));
  importsServices.set(file, found);
  return found;
}

const log = (line) => console.error(`test services: ${line}`);
let services = { env: {}, stop() {} };
if (files.some(usesServices)) {
  const { startServicesForRun } = await import(servicesModule);
  services = await startServicesForRun(log);
  const unavailable = ["EDGE_TEST_DATABASE_UNAVAILABLE", "EDGE_TEST_S3_UNAVAILABLE"].filter((v) => services.env[v]);
  if (process.env.EDGE_TEST_REQUIRE_SERVICES === "1" && unavailable.length > 0) {
    log("EDGE_TEST_REQUIRE_SERVICES=1: not running the tests without them");
    services.stop();
    process.exit(1);
  }
}

// The servers are stopped after the test runner exits, also when this run is interrupted: a terminal's Ctrl-C
// reaches the runner as well (same process group); a SIGTERM sent to this process alone is passed on.
const runner = spawn(process.execPath, ["--test", "--test-concurrency=2", "--test-reporter=spec", ...files], {
  stdio: "inherit",
  // The AWS SDK warns once per process that its releases after January 2027 need Node 22 (package-lock.json
  // pins one that supports Node 20): not news to a test run.
  env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true", ...process.env, ...services.env },
});
process.on("SIGINT", () => {});
process.on("SIGTERM", () => runner.kill("SIGTERM"));
runner.on("exit", (code, signal) => {
  try {
    services.stop();
  } catch (e) {
    log(e.message);
  }
  process.exit(code ?? (signal ? 1 : 0));
});
