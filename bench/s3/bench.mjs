#!/usr/bin/env node
// The S3 API against Ceph RGW, same client (@aws-sdk/client-s3 and lib-storage), one run:
//   - 4 KiB PutObject and GetObject, requests per second with N concurrent clients (default 8);
//   - one large object (default 1 GiB) put with lib-storage's multipart Upload and read back with GetObject,
//     MB/s, with the platform's peak RSS during each (Linux: /proc/<pid>/clear_refs then VmHWM).
// Prints both sides and the ratios (ours / RGW). Not part of the test suite.
//
// The small-object rounds alternate between the two servers (both up at once), so a change in the machine's load
// during the run touches both alike; CPU time per request of each server comes from /proc/<pid>/stat.
//
// Usage: node bench/s3/bench.mjs [--seconds 5 | --requests N] [--rounds 3] [--clients 8] [--mib 1024] [--part-mib 16] [--no-rgw] [--json FILE] [--cpu-prof-dir DIR]
// (--requests: each small round sends N PUTs then N GETs instead of running for --seconds, so the memory the
//  platform holds before the large object, which grows with the requests served, compares across machine loads)
// (--cpu-prof-dir: the platform writes a V8 CPU profile there when it stops; read it with bench/gateway/profile-top.mjs)
// Needs a build (npm run build) and, for RGW, Debian's ceph packages (scripts/services/rgw-up.sh; see its README).
import { execFileSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync, chmodSync } from "node:fs";
import { Agent } from "node:http";
import { loadavg, cpus, totalmem, tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { parseArgs } from "node:util";
import * as s3 from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import { NodeHttpHandler } from "@smithy/node-http-handler";
import { startTestPlatform } from "../../dist/core/testing/platform.js";

const { values: opt } = parseArgs({
  options: {
    seconds: { type: "string", default: "5" },
    requests: { type: "string" },
    rounds: { type: "string", default: "3" },
    clients: { type: "string", default: "8" },
    mib: { type: "string", default: "1024" },
    "part-mib": { type: "string", default: "16" },
    "no-rgw": { type: "boolean", default: false },
    json: { type: "string" },
    "cpu-prof-dir": { type: "string" },
  },
});
const SECONDS = Number(opt.seconds);
const REQUESTS = opt.requests === undefined ? undefined : Number(opt.requests);
const ROUNDS = Number(opt.rounds);
const CLIENTS = Number(opt.clients);
const MIB = Number(opt.mib);
const PART = Number(opt["part-mib"]) * 1024 * 1024;
const SMALL = 4096;
const root = new URL("../..", import.meta.url).pathname;

/** One client config for both servers: path style, checksums only where S3 requires them (RGW 16 needs that). */
function clientFor(target) {
  return new s3.S3Client({
    endpoint: target.endpoint,
    region: target.region,
    forcePathStyle: true,
    credentials: target.credentials,
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
    maxAttempts: 1,
    requestHandler: new NodeHttpHandler({ httpAgent: new Agent({ keepAlive: true, maxSockets: 64 }) }),
  });
}

const pidStatus = (pid, field) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, "utf8"))[1]) / 1024;
/** CPU time (ms, user + system, all threads) the processes used so far. */
const cpuMs = (pids) =>
  pids.reduce((sum, pid) => {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
    return sum + (Number(fields[11]) + Number(fields[12])) * 10;
  }, 0);

/** Resets the peak RSS of the processes (Linux: writing 5 to clear_refs), then reads it after `fn`. */
async function peakRss(pids, fn) {
  for (const pid of pids) writeFileSync(`/proc/${pid}/clear_refs`, "5");
  const result = await fn();
  return { result, peakMiB: pids.reduce((sum, pid) => sum + pidStatus(pid, "VmHWM"), 0) };
}

/** `clients` loops calling `op` for `seconds`, or until `requests` calls started when that is set. */
async function closedLoop(seconds, clients, op, requests) {
  const latencies = [];
  let errors = 0;
  const start = performance.now();
  const end = start + seconds * 1000;
  const more = requests === undefined ? () => performance.now() < end : () => n < requests;
  let n = 0;
  await Promise.all(
    Array.from({ length: clients }, async (_, w) => {
      for (let i = 0; more(); i++) {
        const t = performance.now();
        try {
          await op(w, i, n++);
          latencies.push(performance.now() - t);
        } catch (e) {
          if (errors++ === 0) console.error(`  first error: ${e.name}: ${e.message}`);
        }
      }
    }),
  );
  const elapsed = (performance.now() - start) / 1000;
  return { reqPerSec: latencies.length / elapsed, latencies, errors, count: latencies.length, seconds: elapsed };
}

/** One round of 4 KiB PUTs then GETs against one server; adds to `acc` (counts, latencies, CPU). */
async function smallRound(target, acc) {
  const body = acc.body;
  for (const kind of ["put", "get"]) {
    const cpu0 = cpuMs(target.cpuPids);
    const r =
      kind === "put"
        ? await closedLoop(
            SECONDS,
            CLIENTS,
            async (w, i) => {
              const key = `small/${acc.round}/${w}/${i}`;
              await target.client.send(new s3.PutObjectCommand({ Bucket: target.bucket, Key: key, Body: body }));
              acc.written.push(key);
            },
            REQUESTS,
          )
        : await closedLoop(
            SECONDS,
            CLIENTS,
            async (_w, _i, n) => {
              const out = await target.client.send(new s3.GetObjectCommand({ Bucket: target.bucket, Key: acc.written[(n * 7919) % acc.written.length] }));
              const bytes = await out.Body.transformToByteArray();
              if (bytes.length !== SMALL) throw new Error(`got ${bytes.length} bytes`);
            },
            REQUESTS,
          );
    const sum = acc[kind];
    sum.count += r.count;
    sum.errors += r.errors;
    sum.seconds += r.seconds;
    sum.cpuMs += cpuMs(target.cpuPids) - cpu0;
    sum.latencies.push(...r.latencies);
    sum.rounds.push(Math.round(r.reqPerSec));
  }
}

function summary(sum) {
  const l = sum.latencies.sort((a, b) => a - b);
  const q = (f) => l[Math.min(l.length - 1, Math.floor(f * l.length))] ?? NaN;
  return {
    reqPerSec: sum.count / sum.seconds,
    count: sum.count,
    rounds: sum.rounds,
    p50: q(0.5),
    p99: q(0.99),
    errors: sum.errors,
    cpuMsPerReq: sum.cpuMs / Math.max(sum.count, 1),
  };
}

function pattern() {
  const chunk = randomBytes(1024 * 1024);
  return Readable.from(
    (function* () {
      for (let i = 0; i < MIB; i++) yield chunk;
    })(),
  );
}

async function large(target) {
  const client = target.client;
  const Key = "large.bin";
  const bytes = MIB * 1024 * 1024;
  const rssBeforeMiB = target.pids.reduce((sum, pid) => sum + pidStatus(pid, "VmRSS"), 0);
  const put = await peakRss(target.pids, async () => {
    const t = performance.now();
    const upload = new Upload({ client, params: { Bucket: target.bucket, Key, Body: pattern() }, partSize: PART, queueSize: 4 });
    await upload.done();
    return (performance.now() - t) / 1000;
  });
  const head = await client.send(new s3.HeadObjectCommand({ Bucket: target.bucket, Key }));
  if (head.ContentLength !== bytes) throw new Error(`${target.name}: stored ${head.ContentLength} bytes, not ${bytes}`);
  const get = await peakRss(target.pids, async () => {
    const t = performance.now();
    const out = await client.send(new s3.GetObjectCommand({ Bucket: target.bucket, Key }));
    let n = 0;
    for await (const c of out.Body) n += c.length;
    if (n !== bytes) throw new Error(`${target.name}: read ${n} bytes`);
    return (performance.now() - t) / 1000;
  });
  const mbs = (secs) => bytes / 1e6 / secs;
  return {
    rssBeforeMiB,
    put: { mbPerSec: mbs(put.result), seconds: put.result, peakRssMiB: put.peakMiB },
    get: { mbPerSec: mbs(get.result), seconds: get.result, peakRssMiB: get.peakMiB },
  };
}

async function ours() {
  const p = await startTestPlatform(opt["cpu-prof-dir"] ? { nodeArgs: ["--cpu-prof", `--cpu-prof-dir=${opt["cpu-prof-dir"]}`] } : {});
  const verified = await p.api("GET", "/user/tokens/verify");
  return {
    name: "edge",
    endpoint: p.url,
    region: "auto",
    bucket: "bench",
    credentials: { accessKeyId: verified.body.result.id, secretAccessKey: createHash("sha256").update(p.token).digest("hex") },
    pids: [p.process.pid],
    cpuPids: [p.process.pid],
    stop: () => p.dispose(),
  };
}

function rgw() {
  const dir = mkdtempSync(join(tmpdir(), "bench-rgw-"));
  chmodSync(dir, 0o711);
  const line = execFileSync("bash", [join(root, "scripts/services/rgw-up.sh"), join(dir, "s3")], {
    env: { ...process.env, MEMSTORE_BYTES: String(Math.max(3, Math.ceil((MIB * 1.5) / 1024) + 1) * 1024 ** 3) },
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  }).trim();
  const env = Object.fromEntries(line.split(/\s+/).map((kv) => kv.split(/=(.*)/s).slice(0, 2)));
  const pid = (name) => Number(readFileSync(join(dir, "s3", "run", `${name}.pid`), "utf8"));
  return {
    name: "rgw",
    endpoint: env.EDGE_TEST_S3_ENDPOINT,
    region: "us-east-1",
    bucket: "bench",
    credentials: { accessKeyId: env.EDGE_TEST_S3_ACCESS_KEY_ID, secretAccessKey: env.EDGE_TEST_S3_SECRET_ACCESS_KEY },
    // radosgw and the OSD hold the bytes (memstore); the monitor's share does not change with the load.
    pids: [pid("client.rgw.a"), pid("osd.0")],
    cpuPids: [pid("client.rgw.a"), pid("osd.0"), pid("mon.a")],
    stop: async () => {
      execFileSync("bash", [join(root, "scripts/services/rgw-down.sh"), join(dir, "s3")], { stdio: "inherit" });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const machine = {
  cpus: cpus().length,
  cpu: cpus()[0]?.model,
  memGiB: Math.round(totalmem() / 1024 ** 3),
  node: process.version,
  date: new Date().toISOString(),
};
const loadBefore = loadavg();
const targets = [];
const results = {};
try {
  for (const start of opt["no-rgw"] ? [ours] : [ours, rgw]) targets.push(await start());
  const body = randomBytes(SMALL);
  const accs = new Map();
  for (const t of targets) {
    t.client = clientFor(t);
    await t.client.send(new s3.CreateBucketCommand({ Bucket: t.bucket }));
    const fresh = () => ({ count: 0, errors: 0, seconds: 0, cpuMs: 0, latencies: [], rounds: [] });
    accs.set(t, { body, written: [], put: fresh(), get: fresh() });
  }
  for (let round = 0; round < ROUNDS; round++) {
    for (const t of targets) {
      console.error(
        `round ${round + 1}/${ROUNDS}: ${t.name}, ${SMALL} B objects, ${CLIENTS} clients, ${REQUESTS === undefined ? `${SECONDS} s` : `${REQUESTS} requests`} PUT then GET (load ${loadavg()[0].toFixed(2)})`,
      );
      const acc = accs.get(t);
      acc.round = round;
      await smallRound(t, acc);
    }
  }
  for (const t of targets) {
    console.error(`${t.name}: ${MIB} MiB object, parts of ${PART / 1024 / 1024} MiB (load ${loadavg()[0].toFixed(2)})`);
    const acc = accs.get(t);
    results[t.name] = { small: { put: summary(acc.put), get: summary(acc.get) }, large: await large(t) };
  }
} finally {
  for (const t of targets) {
    t.client?.destroy();
    await t.stop();
  }
}
const loadAfter = loadavg();

const f = (n, d = 0) => (Number.isFinite(n) ? n.toFixed(d) : "-");
const rows = [
  ["4 KiB PUT req/s", (r) => r.small.put.reqPerSec],
  ["4 KiB GET req/s", (r) => r.small.get.reqPerSec],
  [`${MIB} MiB multipart PUT MB/s`, (r) => r.large.put.mbPerSec],
  [`${MIB} MiB GET MB/s`, (r) => r.large.get.mbPerSec],
];
console.log(`machine: ${machine.cpus} × ${machine.cpu}, ${machine.memGiB} GiB, Node ${machine.node}; ${machine.date}`);
console.log(`load average before ${loadBefore.map((l) => l.toFixed(2)).join(" ")}, after ${loadAfter.map((l) => l.toFixed(2)).join(" ")}`);
console.log(`${"".padEnd(28)} ${"edge".padStart(10)} ${"rgw".padStart(10)} ${"edge/rgw".padStart(9)}`);
for (const [label, get] of rows) {
  const a = results.edge && get(results.edge);
  const b = results.rgw && get(results.rgw);
  console.log(`${label.padEnd(28)} ${f(a).padStart(10)} ${f(b).padStart(10)} ${(b ? f(a / b, 2) + "×" : "-").padStart(9)}`);
}
for (const [name, r] of Object.entries(results)) {
  console.log(
    `${name}: PUT rounds ${r.small.put.rounds.join("/")} req/s, p50 ${f(r.small.put.p50, 1)} ms, p99 ${f(r.small.put.p99, 1)} ms, server CPU ${f(r.small.put.cpuMsPerReq, 2)} ms/req, ${r.small.put.errors} errors; ` +
      `GET rounds ${r.small.get.rounds.join("/")} req/s, p50 ${f(r.small.get.p50, 1)} ms, p99 ${f(r.small.get.p99, 1)} ms, server CPU ${f(r.small.get.cpuMsPerReq, 2)} ms/req, ${r.small.get.errors} errors; ` +
      `RSS ${f(r.large.rssBeforeMiB)} MiB before the large object (after ${r.small.put.count + r.small.get.count} small requests), peak ${f(r.large.put.peakRssMiB)} MiB during its PUT, ${f(r.large.get.peakRssMiB)} MiB during its GET`,
  );
}
if (opt.json)
  writeFileSync(
    opt.json,
    JSON.stringify({ machine, loadBefore, loadAfter, seconds: SECONDS, requests: REQUESTS, rounds: ROUNDS, clients: CLIENTS, mib: MIB, results }, null, 2),
  );
