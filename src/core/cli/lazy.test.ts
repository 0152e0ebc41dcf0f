import { test } from "node:test";
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { EdgeError } from "../errors.js";
import { defineCommand, type OptionSpec } from "./command.js";
import type { CliContext, CliIO } from "./context.js";
import { lazy } from "./lazy.js";
import { optionValues } from "./option-values.js";
import { runCli } from "./run.js";

function capture(): { io: CliIO; out: () => string; err: () => string } {
  const sink = () => {
    let text = "";
    const stream = new Writable({
      write(chunk, _enc, cb) {
        text += String(chunk);
        cb();
      },
    });
    return { stream: stream as unknown as NodeJS.WriteStream, text: () => text };
  };
  const out = sink();
  const err = sink();
  const io = { stdin: process.stdin, stdout: out.stream, stderr: err.stream, env: {}, cwd: process.cwd() };
  return { io, out: out.text, err: err.text };
}

test("lazy: the handler's module is loaded when the command runs, not when it is declared", async () => {
  let loads = 0;
  const module = {
    greet: async (args: { name?: string }, ctx: CliContext) => {
      ctx.write(`hello ${args.name}\n`);
      return 3;
    },
  };
  const cmd = defineCommand({
    path: ["greet"],
    describe: "greet",
    options: { name: { type: "string", describe: "who" } },
    handler: lazy(async () => {
      loads++;
      return module;
    }, "greet"),
  });
  assert.equal(loads, 0);
  const c = capture();
  assert.equal(await runCli(["greet", "--name", "you"], [cmd], [], c.io), 3);
  assert.equal(loads, 1);
  assert.equal(c.out(), "hello you\n");
});

test("a refusal from a store the CLI opened itself is one error line with its code, exit 1", async () => {
  const cmd = defineCommand({
    path: ["refuse"],
    describe: "refuse",
    handler: async () => {
      throw new EdgeError(404, 10009, "key not found");
    },
  });
  const c = capture();
  assert.equal(await runCli(["refuse"], [cmd], [], c.io), 1);
  assert.equal(c.err(), "✘ [ERROR] key not found [code: 10009]\n\n");
});

test("optionValues: the options a spec declares, defaults applied, values checked against the spec", () => {
  const spec = {
    port: { type: "number", describe: "port", default: 1053 },
    host: { type: "string", describe: "host" },
    level: { type: "string", describe: "level", choices: ["info", "debug"], default: "info" },
  } satisfies Record<string, OptionSpec>;
  const values = optionValues(
    new Map<string, unknown>([
      ["host", "::1"],
      ["other", 1],
    ]),
    spec,
  );
  assert.deepEqual({ ...values }, { port: 1053, host: "::1", level: "info" });
  const port: number = values.port; // typed: a default means always a number
  assert.equal(port, 1053);
  assert.throws(() => optionValues(new Map([["port", "53"]]), spec), /--port is "53", not a number/);
  assert.throws(() => optionValues(new Map([["level", "loud"]]), spec), /--level is "loud", not one of: info, debug/);
});
