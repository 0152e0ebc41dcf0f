#!/usr/bin/env node
// Bundles the compiled CLI (dist/cli.js and everything it imports from dist/) into dist/bin/, one chunk per
// lazily imported part. A command then loads a handful of files instead of dozens of modules, which is most of
// what a short command like `edgecli kv key get --local` spends. Packages in node_modules stay external.
import { build } from "esbuild";
import { chmodSync } from "node:fs";

const outdir = new URL("../dist/bin/", import.meta.url).pathname;
await build({
  // The DNS UDP answering processes run their own small entry (forked by dist/dns/udp-pool.js's bundled copy).
  entryPoints: { edgecli: new URL("../dist/cli.js", import.meta.url).pathname, "udp-worker": new URL("../dist/dns/udp-worker.js", import.meta.url).pathname },
  outdir,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  packages: "external",
  sourcemap: true,
  logLevel: "warning",
});
chmodSync(`${outdir}edgecli.js`, 0o755);
