#!/usr/bin/env -S node --max-semi-space-size=4 --liftoff-only
// --max-semi-space-size=4 caps V8's young generation at 4 MiB semi-spaces (Node's default: 16). Measured on the
// benchmark VM (docs/benchmarks.md, "V8's young generation capped"): the platform's idle and peak RSS 11-20 MiB lower
// (a 1 GiB proxied transfer under 200 MiB), small cache HITs faster (0.57 -> 0.71x a bare Node server), proxied
// requests and the AI gateway unchanged.
// --liftoff-only keeps WebAssembly on V8's baseline compiler. The only WebAssembly the platform runs is undici's HTTP
// parser (llhttp, every origin answer), and V8 re-compiling its large parse function with TurboFan once it is hot
// took 20-60 MiB of compiler memory on a V8 thread, mostly kept by that thread's malloc arena: a 100 MiB cache fill
// peaked at 177-194 MiB with it, 155-162 without (docs/benchmarks.md, "Resident memory, session 21"). The proxy's
// CPU a request is the same either way (its parsing is a small part of it).
// On the command line, so they win over NODE_OPTIONS: to choose others, run
// `node --max-semi-space-size=<MiB> --liftoff-only "$(command -v edgecli)" serve`.
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
