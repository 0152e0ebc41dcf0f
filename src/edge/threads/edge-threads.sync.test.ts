import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { LocalBus } from "../../core/cluster/bus.js";
import { createLogger } from "../../core/logger.js";
import { EdgeThreads } from "./edge-threads.js";

/**
 * EdgeThreads against stand-in thread scripts (real worker threads, the thread's side of the protocol only): what
 * `synced()` waits for, and what happens to a thread that does not apply a change in time or exits.
 */
const dir = mkdtempSync(join(tmpdir(), "edge-threads-sync-"));
after(() => rmSync(dir, { recursive: true, force: true }));

/**
 * A thread script: ready at once; thread 1 applies each notice at once, the others once the file `<name>.release`
 * exists (never, with `applies` false); each start is logged in `<name>.starts`.
 */
function threadScript(name: string, applies: boolean): string {
  const path = join(dir, `${name}.mjs`);
  writeFileSync(
    path,
    `import { parentPort, workerData } from "node:worker_threads";
import { appendFileSync, existsSync } from "node:fs";
appendFileSync(${JSON.stringify(join(dir, `${name}.starts`))}, workerData.index + "\\n");
const release = ${JSON.stringify(join(dir, `${name}.release`))};
const apply = (n) => {
  if (workerData.index === 1 || existsSync(release)) parentPort.postMessage({ type: "applied", n });
  else setTimeout(() => apply(n), 20);
};
parentPort.on("message", (m) => {
  if (m.type === "stop") process.exit(0);
  if (m.type === "notice" && ${applies}) apply(m.n);
});
parentPort.postMessage({ type: "ready" });
`,
  );
  return path;
}

function threadsWith(script: string, loops: number, bus: LocalBus) {
  return new EdgeThreads({
    script,
    loops,
    bus,
    areas: ["dns"],
    stateDir: dir,
    options: new Map(),
    log: createLogger({ level: "silent" }),
    traffic: () => undefined,
    connection: (socket) => socket.destroy(),
  });
}

test("synced() resolves once every thread applied every notice relayed before the call, not before", async () => {
  const bus = new LocalBus("node-a");
  const threads = threadsWith(threadScript("slow", true), 3, bus);
  await threads.start(-1);
  try {
    await threads.synced(); // nothing relayed yet: at once
    await bus.publish("dns", "zone:1");
    let done = false;
    const synced = threads.synced().then(() => (done = true));
    // Thread 1 applies at once, thread 2 only once released: until then synced() must wait.
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(done, false, "synced() resolved before every thread applied the notice");
    writeFileSync(join(dir, "slow.release"), "");
    await synced;
    // A notice of an area the threads do not follow is not relayed: nothing to wait for.
    await bus.publish("kv", "ns:1");
    let immediate = false;
    await Promise.race([threads.synced().then(() => (immediate = true)), new Promise((r) => setTimeout(r, 50))]);
    assert.equal(immediate, true);
  } finally {
    await threads.stop();
  }
});

test("a thread that does not apply a change in time is restarted, and synced() gives up waiting for it", async () => {
  const bus = new LocalBus("node-b");
  const threads = threadsWith(threadScript("stuck", false), 2, bus);
  await threads.start(-1);
  try {
    await bus.publish("dns", "zone:1");
    await threads.synced(); // bounded: resolves after the bound, the thread restarted
    for (let i = 0; i < 100 && readFileSync(join(dir, "stuck.starts"), "utf8").trim().split("\n").length < 2; i++) await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(readFileSync(join(dir, "stuck.starts"), "utf8").trim().split("\n"), ["1", "1"], "thread 1 started again");
  } finally {
    await threads.stop();
  }
});
