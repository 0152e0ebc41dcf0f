#!/usr/bin/env node
// The `edgecli` bin. Loads the CommonJS bundle beside it through V8's code cache, made at build time by
// scripts/bundle-cli.mjs, so a short command (`edgecli kv key get --local`) skips parsing and compiling most of
// its JavaScript. A cache that V8 rejects (another Node version) only costs the compile it would have saved.
"use strict";
const { readFileSync, writeFileSync } = require("node:fs");
const { createRequire } = require("node:module");
const { join } = require("node:path");
const { Script } = require("node:vm");

const bundle = join(__dirname, "edgecli.bundle.js");
const cacheFile = join(__dirname, "edgecli.bundle.cache");
let cachedData;
try {
  cachedData = readFileSync(cacheFile);
} catch {
  // built without a cache: compile as usual
}
const script = new Script(`(function (exports, require, module, __filename, __dirname) {${readFileSync(bundle, "utf8")}\n})`, { filename: bundle, cachedData });
// Only the build sets this: it runs representative commands and keeps what V8 compiled for them.
if (process.env.EDGECLI_BUILD_CODE_CACHE === "1") {
  process.once("exit", () => writeFileSync(cacheFile, script.createCachedData()));
}
const mod = { exports: {} };
script.runInThisContext()(mod.exports, createRequire(bundle), mod, bundle, __dirname);
