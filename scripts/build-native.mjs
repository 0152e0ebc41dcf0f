#!/usr/bin/env node
// Builds the native addons with node-gyp and copies each to dist/native/, where its loader finds it:
// - src/dns/server/udp/native → dist/native/dns_udp_fast.node (src/dns/server/udp/fast-path.ts): the DNS server's
//   UDP path;
// - src/edge/cache/native → dist/native/edge_sendfile.node (src/edge/cache/sendfile.ts): the cache's sendfile(2)
//   path for big stored bodies (Linux only);
// - src/core/os/native → dist/native/edge_os.node (src/core/os/os.ts): dup(2) for the edge threads' listening
//   descriptors and glibc's malloc_trim (Linux only).
//
// node-gyp is the copy bundled with npm (not a dependency of ours). Node's headers are taken from the
// installation running this script when it ships them (official tarballs and Debian's nodejs-dev do), so
// the build needs no download. A failed build is a warning, not an error: the server then takes the JavaScript
// path (DNS answers UDP in JavaScript, the cache streams files) and says so in its log; the native tests fail, so
// CI still notices.
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";

const root = new URL("..", import.meta.url).pathname;
const prefix = dirname(dirname(process.execPath));
const addons = [
  { dir: join(root, "src", "dns", "server", "udp", "native"), name: "dns_udp_fast", without: "the DNS server will answer UDP in JavaScript" },
  { dir: join(root, "src", "edge", "cache", "native"), name: "edge_sendfile", without: "the cache will stream big bodies in JavaScript" },
  { dir: join(root, "src", "core", "os", "native"), name: "edge_os", without: "edgecli serve will refuse --edge-threads above 1" },
];

const candidates = [
  process.env.npm_execpath && join(dirname(process.env.npm_execpath), "..", "node_modules", "node-gyp", "bin", "node-gyp.js"),
  join(prefix, "lib", "node_modules", "npm", "node_modules", "node-gyp", "bin", "node-gyp.js"),
].filter(Boolean);
const nodeGyp = candidates.find((p) => existsSync(p));

for (const addon of addons) {
  const out = join(root, "dist", "native", `${addon.name}.node`);
  rmSync(out, { force: true });
  if (!nodeGyp) {
    console.warn(`build-native: node-gyp not found (looked at ${candidates.join(", ")}); ${addon.without}`);
    continue;
  }
  if ((addon.name === "edge_sendfile" || addon.name === "edge_os") && process.platform !== "linux") {
    console.warn(`build-native: ${addon.name} is Linux only; ${addon.without}`);
    continue;
  }
  const args = [nodeGyp, "rebuild", "--directory", addon.dir, "--loglevel", "warn"];
  if (existsSync(join(prefix, "include", "node", "node_api.h"))) args.push(`--nodedir=${prefix}`);
  const r = spawnSync(process.execPath, args, { stdio: ["ignore", "inherit", "inherit"] });
  if (r.status !== 0) {
    console.warn(`build-native: ${addon.name} did not build (see above); ${addon.without}`);
    continue;
  }
  mkdirSync(dirname(out), { recursive: true });
  copyFileSync(join(addon.dir, "build", "Release", `${addon.name}.node`), out);
}
