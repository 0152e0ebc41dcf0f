#!/usr/bin/env node
// Builds the DNS server's native UDP path (src/dns/server/udp/native) with node-gyp and copies it to
// dist/native/dns_udp_fast.node, where src/dns/server/udp/fast-path.ts loads it from.
//
// node-gyp is the copy bundled with npm (not a dependency of ours). Node's headers are taken from the
// installation running this script when it ships them (official tarballs and Debian's nodejs-dev do), so
// the build needs no download. A failed build is a warning, not an error: the server then answers UDP in
// JavaScript and says so in its log; the native tests fail, so CI still notices.
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";

const root = new URL("..", import.meta.url).pathname;
const src = join(root, "src", "dns", "server", "udp", "native");
const out = join(root, "dist", "native", "dns_udp_fast.node");
const prefix = dirname(dirname(process.execPath));

const candidates = [
  process.env.npm_execpath && join(dirname(process.env.npm_execpath), "..", "node_modules", "node-gyp", "bin", "node-gyp.js"),
  join(prefix, "lib", "node_modules", "npm", "node_modules", "node-gyp", "bin", "node-gyp.js"),
].filter(Boolean);
const nodeGyp = candidates.find((p) => existsSync(p));

rmSync(out, { force: true });
if (!nodeGyp) {
  console.warn(`build-native: node-gyp not found (looked at ${candidates.join(", ")}); the DNS server will answer UDP in JavaScript`);
  process.exit(0);
}
const args = [nodeGyp, "rebuild", "--directory", src, "--loglevel", "warn"];
if (existsSync(join(prefix, "include", "node", "node_api.h"))) args.push(`--nodedir=${prefix}`);
const r = spawnSync(process.execPath, args, { stdio: ["ignore", "inherit", "inherit"] });
if (r.status !== 0) {
  console.warn("build-native: the native UDP path did not build (see above); the DNS server will answer UDP in JavaScript");
  process.exit(0);
}
mkdirSync(dirname(out), { recursive: true });
copyFileSync(join(src, "build", "Release", "dns_udp_fast.node"), out);
