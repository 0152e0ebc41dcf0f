#!/usr/bin/env node
// Bundles the compiled CLI (dist/cli.js and everything it imports from dist/) into one CommonJS file,
// dist/bin/edgecli.bundle.js, and installs the launcher (scripts/edgecli-launcher.cjs) as dist/bin/edgecli.js.
//
// Why: a short command such as `edgecli kv key get --local` is mostly Node start-up and module loading. One
// CommonJS file avoids the ESM loader and its per-module resolution; a V8 code cache, made here by running
// representative commands, avoids compiling the code those commands need. Packages stay external (required from
// node_modules at run time) except better-sqlite3's JavaScript, which every local command loads and which is
// small; its native addon is still loaded from node_modules.
import { build } from "esbuild";
import { execFileSync } from "node:child_process";
import { chmodSync, copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const root = new URL("..", import.meta.url).pathname;
const outdir = join(root, "dist", "bin");
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const external = [...Object.keys(pkg.dependencies).filter((name) => name !== "better-sqlite3"), "bindings"];

/** `await import("undici")` of an external package becomes a require() in the bundle, so no ESM loader starts. */
const externalImportsAsRequire = {
  name: "external-imports-as-require",
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (args) => {
      const name = args.path.startsWith("@") ? args.path.split("/").slice(0, 2).join("/") : args.path.split("/")[0];
      if (!external.includes(name)) return undefined;
      if (args.kind === "dynamic-import") return { path: args.path, namespace: "require-external" };
      return { path: args.path, external: true };
    });
    b.onLoad({ filter: /.*/, namespace: "require-external" }, (args) => ({
      contents: `module.exports = require(${JSON.stringify(args.path)});`,
      loader: "js",
    }));
  },
};

const common = {
  bundle: true,
  format: "cjs",
  platform: "node",
  target: "node20",
  plugins: [externalImportsAsRequire],
  define: { "import.meta.url": "__edgecliBundleUrl" },
  banner: { js: 'const __edgecliBundleUrl = require("node:url").pathToFileURL(__filename).href;' },
  logLevel: "warning",
};
rmSync(outdir, { recursive: true, force: true });
await build({ ...common, entryPoints: [join(root, "dist", "cli.js")], outfile: join(outdir, "edgecli.bundle.js") });
// Processes and threads the platform starts run their own small entry, found beside the code that starts them
// (dist/dns/server/udp/pool.js forks ./answering-process.js; bundled, that is dist/bin/answering-process.js).
const entries = [
  "dns/server/udp/answering-process.js", // the DNS answering processes (forked by dns/server/udp/pool.js)
  "kv/bulk/sqlite-writer-thread.js", // the KV bulk writer's thread (started by kv/bulk/sqlite-writer.js)
  "core/db/wal-checkpointer-thread.js", // the SQLite checkpoint thread (started by core/db/wal-checkpointer.js)
  "ai-gateway/logs/sqlite-log-thread.js", // the AI gateway's log writer thread (started by ai-gateway/logs/sqlite-log-writer.js)
  "d1/engine/d1-executor.js", // D1's executor process (forked by d1/engine/executor.js)
  "analytics/rollups/sqlite-read-thread.js", // the analytics rollups' read thread (started by analytics/rollups/sqlite-reader.js)
  "edge-thread.js", // the edge threads (started by edge/threads/edge-threads.js, handed its path by platform.js)
];
// Each entry lands in dist/bin under its file name, where the code that starts it finds it: two entries of one
// name would overwrite each other (one area's thread would start the other's).
const names = entries.map((entry) => entry.split("/").pop());
const twice = names.filter((name, i) => names.indexOf(name) !== i);
if (twice.length) throw new Error(`bundle entries share a file name: ${twice.join(", ")}`);
for (const entry of entries) {
  await build({ ...common, entryPoints: [join(root, "dist", ...entry.split("/"))], outfile: join(outdir, entry.split("/").pop()) });
}
// package.json says "type": "module"; the files here are CommonJS.
writeFileSync(join(outdir, "package.json"), '{ "type": "commonjs" }\n');
const bin = join(outdir, "edgecli.js");
copyFileSync(join(root, "scripts", "edgecli-launcher.cjs"), bin);
chmodSync(bin, 0o755);

// The launcher wraps the bundle in a function, where dist/cli.js's hashbang line would be a syntax error.
// Non-ASCII characters are escaped: V8 keeps a script's source in the heap for as long as it runs, one byte a
// character when every character fits in Latin-1 and two otherwise, so a single "…" left in a comment (esbuild
// escapes them in code, not in comments) doubled the bundle's 2 MiB of source in every running platform.
// `\uXXXX` means the same character in strings, regular expressions and identifiers, and nothing in comments.
const bundled = readFileSync(join(outdir, "edgecli.bundle.js"), "utf8")
  .replace(/^#!.*\n/, "")
  .replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
writeFileSync(join(outdir, "edgecli.bundle.js"), bundled);
if (/\bimport\(/.test(bundled)) throw new Error("edgecli.bundle.js still contains import(): the launcher cannot run it");

// The code cache: each run adds what it compiled to the cache the previous run left.
const work = mkdtempSync(join(tmpdir(), "edgecli-code-cache-"));
try {
  const local = ["--namespace-id", "0".repeat(32), "--local", "--persist-to", join(work, "state")];
  writeFileSync(
    join(work, "bulk.json"),
    JSON.stringify([
      { key: "a", value: "1" },
      { key: "b", value: "2" },
    ]),
  );
  writeFileSync(join(work, "keys.json"), JSON.stringify(["a"]));
  const runs = [
    ["--help"],
    ["kv", "key", "put", "k", "v", ...local],
    ["kv", "key", "get", "k", "--text", ...local],
    ["kv", "key", "list", ...local],
    ["kv", "bulk", "put", join(work, "bulk.json"), ...local],
    ["kv", "bulk", "delete", join(work, "keys.json"), "--force", ...local],
    ["kv", "key", "delete", "k", ...local],
    ["kv", "key", "get", "k", ...local],
  ];
  const env = { ...process.env, EDGECLI_BUILD_CODE_CACHE: "1", NO_COLOR: "1" };
  // With the flags the bin starts Node with (its `#!/usr/bin/env -S node …` line): V8 rejects a code cache made
  // under other flags (a changed --max-semi-space-size is enough).
  const binFlags = (/^#!\/usr\/bin\/env -S node((?: \S+)*)\s*$/.exec(readFileSync(bin, "utf8").split("\n", 1)[0])?.[1] ?? "").split(" ").filter(Boolean);
  for (const args of runs) {
    try {
      execFileSync(process.execPath, [...binFlags, bin, ...args], { cwd: work, env, stdio: "pipe" });
    } catch (err) {
      // The last run is a key that is gone, which exits 1: its error path is worth caching too.
      if (err.status !== 1) throw err;
    }
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
