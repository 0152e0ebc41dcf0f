import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, createServer } from "node:net";
import { after, before, test } from "node:test";
import { LocalBus } from "../../core/cluster/bus.js";
import { createLogger } from "../../core/logger.js";
import { EdgeThreads } from "./edge-threads.js";

/**
 * EdgeThreads against stand-in thread scripts (real worker threads, the thread's side of the protocol only): what
 * `synced()` waits for, and what happens to a thread that does not apply a change in time or exits.
 */
const dir = mkdtempSync(join(tmpdir(), "edge-threads-sync-"));
/** A listening socket (the stand-in threads never accept on it; each gets a copy of its descriptor). */
const listening = createServer((socket) => socket.end("main"));
let listenFd = -1;
before(async () => {
  await new Promise<void>((resolve) => listening.listen(0, "127.0.0.1", () => resolve()));
  listenFd = (listening as unknown as { _handle: { fd: number } })._handle.fd;
});
after(() => {
  listening.close();
  rmSync(dir, { recursive: true, force: true });
});

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
  if (m.type === "drain") parentPort.postMessage({ type: "drained" });
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
  await threads.start(listenFd);
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

test("a thread that does not apply a change in time does not hold the API up past the bound, and is not ended for it", async () => {
  const bus = new LocalBus("node-b");
  const threads = threadsWith(threadScript("stuck", false), 2, bus);
  await threads.start(listenFd);
  try {
    await bus.publish("dns", "zone:1");
    await threads.synced(); // bounded: resolves after the bound (the thread serves nothing itself until it applied)
    await new Promise((r) => setTimeout(r, 1500));
    assert.deepEqual(readFileSync(join(dir, "stuck.starts"), "utf8").trim().split("\n"), ["1"], "thread 1 was not ended and started again");
  } finally {
    await threads.stop();
  }
});

test("a thread that ends closes only its own descriptor: the main thread's socket still accepts, and the thread is started again", async () => {
  const path = join(dir, "listener.mjs");
  // Accepts on its copy of the descriptor, then ends at the first notice (as an uncaught error would end it).
  writeFileSync(
    path,
    `import { parentPort, workerData } from "node:worker_threads";
import { connect, createServer } from "node:net";
import { appendFileSync } from "node:fs";
appendFileSync(${JSON.stringify(join(dir, "listener.starts"))}, workerData.index + "\\n");
const server = createServer((socket) => socket.end("thread"));
server.listen({ fd: workerData.fd }, () => parentPort.postMessage({ type: "ready" }));
parentPort.on("message", (m) => {
  if (m.type === "drain") parentPort.postMessage({ type: "drained" });
  if (m.type === "stop") process.exit(0);
  if (m.type === "notice") throw new Error("a thread's uncaught error");
});
`,
  );
  const bus = new LocalBus("node-c");
  const threads = threadsWith(path, 2, bus);
  await threads.start(listenFd);
  try {
    await bus.publish("dns", "zone:1");
    for (let i = 0; i < 100 && readFileSync(join(dir, "listener.starts"), "utf8").trim().split("\n").length < 2; i++)
      await new Promise((r) => setTimeout(r, 100));
    assert.equal(readFileSync(join(dir, "listener.starts"), "utf8").trim().split("\n").length, 2, "thread 1 started again");
    // Connections still reach a loop (the main thread's or the new thread's), never a closed socket.
    const port = (listening.address() as { port: number }).port;
    for (let i = 0; i < 20; i++) {
      const answer = await new Promise<string>((resolve, reject) => {
        const socket = connect(port, "127.0.0.1");
        let text = "";
        socket.on("data", (d) => (text += d));
        socket.on("end", () => resolve(text));
        socket.on("error", reject);
      });
      assert.ok(answer === "main" || answer === "thread", answer);
    }
  } finally {
    await threads.stop();
  }
});
