#!/usr/bin/env node
// What the platform's process holds after rounds of small S3 objects (the state bench.mjs starts its large transfer
// from): rounds of N 4 KiB PutObjects then N GetObjects with 8 clients (a count, not a duration, so the figures do not
// depend on the machine's load), and after each round the process's RSS split into file-backed and anonymous memory,
// V8's heap by space (physical and used, before and after a full GC), ArrayBuffers and other external memory, with
// the server's CPU time per request. Measurement only, not part of the test suite.
//
// Usage: node bench/s3/held-memory.mjs [--rounds 3] [--requests 5000] [--snapshot] [--node=<node option>]...
// (--snapshot: a V8 heap snapshot after the last round, path printed; --node: options for the platform's Node process)
// Needs a build (npm run build); Linux (/proc).
import { createHash, randomBytes } from "node:crypto";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { Agent } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import * as s3 from "@aws-sdk/client-s3";
import { NodeHttpHandler } from "@smithy/node-http-handler";
import { startTestPlatform } from "../../dist/core/testing/platform.js";

const { values: opt } = parseArgs({
  options: {
    rounds: { type: "string", default: "3" },
    requests: { type: "string", default: "5000" },
    snapshot: { type: "boolean", default: false },
    node: { type: "string", multiple: true, default: [] },
  },
});
const REQUESTS = Number(opt.requests);
const CLIENTS = 8;
const file = join(tmpdir(), `held-memory-${process.pid}.json`);
const preload = fileURLToPath(new URL("./held-memory-preload.mjs", import.meta.url));
const p = await startTestPlatform({
  nodeArgs: ["--expose-gc", "--import", preload, ...opt.node],
  env: { HELD_MEMORY_FILE: file, HELD_MEMORY_SNAPSHOT: join(tmpdir(), `held-memory-${process.pid}.heapsnapshot`) },
});
const pid = p.process.pid;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Signals the process and waits for the file its answer goes to. */
async function ask(signal, path) {
  rmSync(path, { force: true });
  process.kill(pid, signal);
  while (!existsSync(path)) await sleep(50);
  await sleep(100);
  return readFileSync(path, "utf8");
}

const MiB = (bytes) => (bytes / 1048576).toFixed(1);
function print(label, b) {
  const mu = b.memoryUsage;
  const v8Physical = b.heap.total_physical_size;
  const anon = b.smaps.anonymousKiB * 1024;
  console.log(
    `${label}: RSS ${MiB(mu.rss)} MiB = file-backed ${MiB(b.smaps.rssKiB * 1024 - anon)} + anonymous ${MiB(anon)}; ` +
      `V8 heap ${MiB(v8Physical)} physical (${MiB(mu.heapUsed)} used), ArrayBuffers ${MiB(mu.arrayBuffers)}, other external ${MiB(mu.external - mu.arrayBuffers)}, ` +
      `rest of anonymous (malloc: SQLite, libuv, OpenSSL, stacks) ${MiB(anon - v8Physical - mu.external)}`,
  );
  const spaces = b.spaces.filter((s) => s.physical >= 512 * 1024).map((s) => `${s.name.replace(/_space$/, "")} ${MiB(s.physical)}/${MiB(s.used)}`);
  console.log(`    V8 spaces, physical/used MiB: ${spaces.join(", ")}`);
}
async function report(label) {
  const out = JSON.parse(await ask("SIGWINCH", file));
  print(`${label}, before GC`, out.beforeGc);
  if (out.afterGc) print(`${label}, after GC`, out.afterGc);
}

const cpuMs = () => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
};
/** `op` called REQUESTS times by CLIENTS loops; returns a line with the time and the server's CPU per request. */
async function run(op) {
  const t0 = performance.now();
  const cpu0 = cpuMs();
  let n = 0;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (n < REQUESTS) await op(n++);
    }),
  );
  return `${REQUESTS} in ${((performance.now() - t0) / 1000).toFixed(1)} s, server CPU ${((cpuMs() - cpu0) / REQUESTS).toFixed(2)} ms/req`;
}

const verified = await p.api("GET", "/user/tokens/verify");
const client = new s3.S3Client({
  endpoint: p.url,
  region: "auto",
  forcePathStyle: true,
  credentials: { accessKeyId: verified.body.result.id, secretAccessKey: createHash("sha256").update(p.token).digest("hex") },
  requestChecksumCalculation: "WHEN_REQUIRED",
  responseChecksumValidation: "WHEN_REQUIRED",
  maxAttempts: 1,
  requestHandler: new NodeHttpHandler({ httpAgent: new Agent({ keepAlive: true, maxSockets: 64 }) }),
});
try {
  await client.send(new s3.CreateBucketCommand({ Bucket: "bench" }));
  const body = randomBytes(4096);
  const written = [];
  await report("idle");
  for (let round = 1; round <= Number(opt.rounds); round++) {
    const puts = await run(async (i) => {
      const key = `small/${round}/${i}`;
      await client.send(new s3.PutObjectCommand({ Bucket: "bench", Key: key, Body: body }));
      written.push(key);
    });
    const gets = await run(async (i) => {
      const out = await client.send(new s3.GetObjectCommand({ Bucket: "bench", Key: written[(i * 7919) % written.length] }));
      await out.Body.transformToByteArray();
    });
    console.log(`round ${round}: PUT ${puts}; GET ${gets}`);
    await report(`after round ${round}`);
  }
  if (opt.snapshot) console.log(`heap snapshot: ${await ask("SIGPWR", `${file}.snapshot`)}`);
} finally {
  client.destroy();
  await p.dispose();
  rmSync(file, { force: true });
}
