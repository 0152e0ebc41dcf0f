#!/usr/bin/env node
import { runCli } from "./core/cli/run.js";
import { aliases, commands, groups } from "./commands.js";

const code = await runCli(process.argv.slice(2), commands, aliases, {
  stdin: process.stdin,
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  cwd: process.cwd(),
}, groups);
process.exitCode = code;
