#!/usr/bin/env node
import { runCli } from "./core/cli/run.js";
import { aliases, commands, groups } from "./commands.js";

// No top-level await: the published bin is a CommonJS bundle of this file (see scripts/bundle-cli.mjs).
void runCli(
  process.argv.slice(2),
  commands,
  aliases,
  {
    stdin: process.stdin,
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    cwd: process.cwd(),
  },
  groups,
).then((code) => {
  process.exitCode = code;
});
