import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createLogger } from "../../core/logger.js";
import { eventually } from "../../core/testing/eventually.js";
import { withTempDir } from "../../core/testing/temp-dir.js";
import { isRunning, procInfo, WorkerdLeash } from "./workerd-leash.js";

const log = createLogger({ level: "silent" });

/** A long-running process whose command line names `configFile`, as a workerd's does. */
function fakeWorkerd(configFile: string): ChildProcess {
  return spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)", configFile], { stdio: "ignore" });
}

test("endStrays ends a recorded process, and leaves one whose start time or command line does not match", async () => {
  await withTempDir("leash-", async (dir) => {
    const pidDir = join(dir, "pids");
    const leash = WorkerdLeash.create(pidDir, log);
    const config = join(dir, "config.capnp");
    const ours = fakeWorkerd(config);
    const recycled = fakeWorkerd(config);
    const stranger = fakeWorkerd(join(dir, "another.capnp"));
    try {
      for (const c of [ours, recycled, stranger]) leash.spawned(c.pid!, config);
      // The same pid, started at another time: the system gave the pid to a new process.
      const file = join(pidDir, `${recycled.pid}.json`);
      writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, "utf8")), startTime: "1" }));

      assert.deepEqual(await WorkerdLeash.endStrays(pidDir, log), [ours.pid]);
      assert.ok(!isRunning(ours.pid!));
      assert.ok(isRunning(recycled.pid!), "a process with the pid but another start time is not touched");
      assert.ok(isRunning(stranger.pid!), "a process without the recorded config on its command line is not touched");
      assert.deepEqual(await WorkerdLeash.endStrays(pidDir, log), [], "the records are gone once checked");
    } finally {
      for (const c of [ours, recycled, stranger]) c.kill("SIGKILL");
    }
  });
});

const hasSetpriv = spawnSync("sh", ["-c", "command -v setpriv"]).status === 0;

test("a leashed command dies with the process that started it", { skip: !hasSetpriv && "setpriv is not installed" }, async () => {
  await withTempDir("leash-", async (dir) => {
    // A parent that starts a leashed child, reports the child's pid and then waits to be killed.
    const leashModule = new URL("./workerd-leash.js", import.meta.url).href;
    const parent = spawn(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        `import { WorkerdLeash } from ${JSON.stringify(leashModule)};
         import { createLogger } from ${JSON.stringify(new URL("../../core/logger.js", import.meta.url).href)};
         import { spawn } from "node:child_process";
         const leash = WorkerdLeash.create(${JSON.stringify(join(dir, "pids"))}, createLogger({ level: "silent" }));
         const c = leash.command(process.execPath, ["-e", "setInterval(() => {}, 1000)"]);
         const child = spawn(c.file, c.args, { stdio: "ignore" });
         process.stdout.write(child.pid + "\\n");
         setInterval(() => {}, 1000);`,
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    try {
      const childPid = Number(await new Promise<string>((r) => parent.stdout!.once("data", (d: Buffer) => r(d.toString()))));
      await eventually(() => procInfo(childPid)?.argv[0] === process.execPath, "the leashed child to become node");
      parent.kill("SIGKILL");
      await eventually(() => !isRunning(childPid), "the leashed child to die with its parent", 10_000);
    } finally {
      parent.kill("SIGKILL");
    }
  });
});

test("a leashed command whose parent is not the process that built it refuses to run", { skip: !hasSetpriv && "setpriv is not installed" }, async () => {
  await withTempDir("leash-", async (dir) => {
    const c = WorkerdLeash.create(join(dir, "pids"), log).command("/bin/echo", ["ran"]);
    // sh runs it as its own child, so its parent is sh, as if this process had died before the signal was armed.
    const r = spawnSync("/bin/sh", ["-c", '"$@"; exit $?', "sh", c.file, ...c.args]);
    assert.equal(r.status, 70);
    assert.equal(r.stdout.toString(), "");
    assert.equal(spawnSync(c.file, c.args).stdout.toString(), "ran\n", "run by this process, it runs");
  });
});

test("a leashed command gets exactly the environment it is given", { skip: !hasSetpriv && "setpriv is not installed" }, async () => {
  await withTempDir("leash-", async (dir) => {
    const c = WorkerdLeash.create(join(dir, "pids"), log).command("/usr/bin/env", []);
    assert.equal(spawnSync(c.file, c.args, { env: { ONLY: "this" } }).stdout.toString(), "ONLY=this\n");
  });
});
