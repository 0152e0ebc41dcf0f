#!/usr/bin/env node
// Runs every compiled test file (dist/**/*.test.js) with Node's test runner.
// Usage: node scripts/run-tests.mjs [substring ...]  — only files whose path contains one of the substrings.
import { readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { spawnSync } from "node:child_process";

const root = new URL("../dist/", import.meta.url).pathname;
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
const r = spawnSync(process.execPath, ["--test", "--test-concurrency=2", "--test-reporter=spec", ...files], { stdio: "inherit" });
process.exit(r.status ?? 1);
