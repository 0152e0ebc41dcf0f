import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { startTestPlatform, type TestPlatform } from "../../core/testing/platform.js";
import { hit, logEntries, uploadScript } from "../testing/helpers.js";
import { eventually } from "../../core/testing/eventually.js";
import { withTempDir } from "../../core/testing/temp-dir.js";
import { isRunning, procInfo } from "./workerd-leash.js";

const CODE = `export default { fetch() { return new Response("alive"); } };`;

/** The pid of the workerd running `script`, from the platform's own log line. */
function workerdPid(p: TestPlatform, script: string): number {
  const live = logEntries(p).filter((e) => e.msg === "worker version live" && e.script === script);
  assert.ok(live.length > 0, `no "worker version live" line for ${script}`);
  return live[live.length - 1]!.workerd_pid as number;
}

/**
 * workerdPid once the line has come through the platform's stdout: the script may answer before the pipe has
 * delivered the line (a clean-clone CI run read the log right after the answer and found none).
 */
async function loggedWorkerdPid(p: TestPlatform, script: string): Promise<number> {
  await eventually(() => logEntries(p).some((e) => e.msg === "worker version live" && e.script === script), `the "worker version live" line of ${script}`);
  return workerdPid(p, script);
}

/** Deploys `script`, checks it answers, and returns its workerd's pid. */
async function deployed(p: TestPlatform, script: string): Promise<number> {
  assert.equal((await uploadScript(p, script, CODE)).status, 200);
  assert.equal((await hit(p, script, "/")).text, "alive");
  const pid = await loggedWorkerdPid(p, script);
  assert.equal(
    procInfo(pid)?.argv.some((a) => a.endsWith("workerd")),
    true,
    "the logged pid is a workerd",
  );
  return pid;
}

async function killOutright(p: TestPlatform): Promise<void> {
  const exited = new Promise((r) => p.process.once("exit", r));
  p.process.kill("SIGKILL");
  await exited;
}

test("kill -9 of edgecli serve leaves no workerd running", async () => {
  await withTempDir("edge-crash-", async (stateDir) => {
    const p = await startTestPlatform({ stateDir });
    let pids: number[];
    try {
      pids = [await deployed(p, "crash-a"), await deployed(p, "crash-b")];
    } catch (err) {
      // A platform left running keeps the test file from ending (a CI run hung here for ten minutes).
      await p.stop();
      throw err;
    }
    await killOutright(p);
    await eventually(() => !pids.some(isRunning), "every workerd of the killed platform to end", 10_000);
  });
});

test("a restarted platform ends the workerd a killed one left behind", async () => {
  await withTempDir("edge-crash-", async (stateDir) => {
    // Without setpriv on PATH nothing ties workerd to the platform: the kill leaves a stray, as on such a host.
    const emptyPath = join(stateDir, "no-bin");
    const unleashed = await startTestPlatform({ stateDir, env: { PATH: emptyPath } });
    assert.match(unleashed.logs(), /setpriv \(util-linux\) with --pdeathsig was not found/);
    let stray: number;
    try {
      stray = await deployed(unleashed, "stray");
    } catch (err) {
      await unleashed.stop();
      throw err;
    }
    await killOutright(unleashed);
    await new Promise((r) => setTimeout(r, 300));
    assert.ok(isRunning(stray), "without the death signal the workerd outlives the platform");

    const restarted = await startTestPlatform({ stateDir });
    try {
      assert.ok(!isRunning(stray), "the restart ended the stray before it started its own workerd");
      assert.ok(logEntries(restarted).some((e) => e.msg?.startsWith("ended a workerd left running") && e.workerd_pid === stray));
      assert.equal((await hit(restarted, "stray", "/")).text, "alive", "the script runs again, on a new workerd");
      assert.notEqual(await loggedWorkerdPid(restarted, "stray"), stray);
    } finally {
      await restarted.stop();
      if (isRunning(stray)) process.kill(stray, "SIGKILL");
    }
  });
});
