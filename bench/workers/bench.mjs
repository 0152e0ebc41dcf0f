// Workers benchmark: one worker doing env.BUCKET.get of a small object, on this platform (workerd + our
// R2 binding backend) and on Miniflare 3 (dispatchFetch and its own HTTP socket), sequential keep-alive
// and 8 concurrent clients, in one run; then a 1 GiB put and get through a worker while sampling the
// platform's resident memory. Run: (cd bench/workers && npm install && node bench.mjs) after `npm run build`.
// hops.mjs beside it times each hop alone, with the CPU per request of every process.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { cpus } from "node:os";
import { Readable } from "node:stream";
import { Miniflare } from "miniflare";
import { startTestPlatform } from "../../dist/core/testing/platform.js";
import { scriptInfo, uploadWorker } from "./upload.mjs";
import { Pool, request } from "../../node_modules/undici/index.js";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const WARMUP_MS = 500;
const BIG = Number(process.env.BENCH_BIG_BYTES ?? 1024 ** 3);
const SMALL = "x".repeat(1024);

const GET_WORKER = `export default { async fetch(req, env) {
  const o = await env.BUCKET.get("small");
  return o ? new Response(o.body) : new Response("missing", { status: 404 });
} };`;

// PUT streams the request body into the bucket; GET streams the object back.
const BIG_WORKER = `export default { async fetch(req, env) {
  const key = new URL(req.url).pathname.slice(1);
  if (req.method === "PUT") { const o = await env.BUCKET.put(key, req.body); return Response.json({ size: o.size, etag: o.etag }); }
  const o = await env.BUCKET.get(key);
  return o ? new Response(o.body, { headers: { "content-length": String(o.size) } }) : new Response("missing", { status: 404 });
} };`;

const pct = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];

/** Runs `concurrency` loops of `once` for SECONDS after a warm-up; returns req/s and latency percentiles (ms). */
async function measure(once, concurrency) {
  let stop = Date.now() + WARMUP_MS;
  const loop = async (lat) => {
    while (Date.now() < stop) {
      const t = process.hrtime.bigint();
      await once();
      lat?.push(Number(process.hrtime.bigint() - t) / 1e6);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, () => loop()));
  const lat = [];
  const start = Date.now();
  stop = start + SECONDS * 1000;
  await Promise.all(Array.from({ length: concurrency }, () => loop(lat)));
  const elapsed = (Date.now() - start) / 1000;
  lat.sort((a, b) => a - b);
  return { rps: lat.length / elapsed, p50: pct(lat, 0.5), p99: pct(lat, 0.99), n: lat.length };
}

/** `socketPath`: talk to a unix socket (workerd's own) instead of `origin`. */
function httpClient(origin, host, connections, socketPath) {
  const pool = new Pool(origin, { connections, pipelining: 1, ...(socketPath ? { socketPath } : {}) });
  const once = async () => {
    const r = await pool.request({ path: "/", method: "GET", headers: host ? { host } : {} });
    const body = await r.body.text();
    if (r.statusCode !== 200 || body.length !== SMALL.length) throw new Error(`bad answer ${r.statusCode} ${body.slice(0, 80)}`);
  };
  return { once, close: () => pool.close() };
}

function rssOf(pid) {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (k) => Number(status.match(new RegExp(`${k}:\\s+(\\d+)`))?.[1] ?? 0) / 1024;
  return { rss: kb("VmRSS"), hwm: kb("VmHWM") };
}

const results = {};
const row = (name, r, base) =>
  console.log(
    `${name.padEnd(34)} ${r.rps.toFixed(0).padStart(7)} req/s   p50 ${r.p50.toFixed(2).padStart(6)} ms   p99 ${r.p99.toFixed(2).padStart(6)} ms   ${base ? `${(r.rps / base.rps).toFixed(2)}x` : ""}`,
  );

console.log(`node ${process.version}, ${cpus().length} CPUs, ${SECONDS}s per case, ${new Date().toISOString()}`);
const p = await startTestPlatform({ args: ["--dns-port", "0"] });
const mf = new Miniflare({ modules: true, script: GET_WORKER, r2Buckets: ["BUCKET"], compatibilityDate: "2024-09-01" });
try {
  const created = await p.api("POST", `/accounts/${p.accountId}/r2/buckets`, { name: "bench" });
  if (created.status !== 200) throw new Error(JSON.stringify(created.body));
  await uploadWorker(p, "bench-get", GET_WORKER);
  await uploadWorker(p, "bench-big", BIG_WORKER);
  const port = new URL(p.url).port;
  const seed = await request(`http://127.0.0.1:${port}/small`, { method: "PUT", body: SMALL, headers: { host: `bench-big.workers.localhost` } });
  await seed.body.text();

  const mfUrl = await mf.ready;
  await (await mf.getR2Bucket("BUCKET")).put("small", SMALL);

  for (const concurrency of [1, 8]) {
    const label = concurrency === 1 ? "sequential" : "8 concurrent";
    const mfDispatch = await measure(async () => {
      const r = await mf.dispatchFetch("http://localhost/");
      const body = await r.text();
      if (body.length !== SMALL.length) throw new Error("miniflare: bad answer");
    }, concurrency);
    const mfHttp = httpClient(mfUrl.origin, undefined, concurrency);
    const mfSocket = await measure(mfHttp.once, concurrency);
    await mfHttp.close();
    const ours = httpClient(`http://127.0.0.1:${port}`, `bench-get.workers.localhost:${port}`, concurrency);
    const platform = await measure(ours.once, concurrency);
    await ours.close();
    // The ceiling: the same script's workerd asked directly on its unix socket, with no edge in front (the
    // R2 binding still calls the platform's backend). Whatever the edge does, the platform cannot beat this.
    const direct = httpClient("http://localhost", undefined, concurrency, scriptInfo(p, "bench-get").socket.socketPath);
    const workerdAlone = await measure(direct.once, concurrency);
    await direct.close();
    results[label] = { mfDispatch, mfSocket, platform, workerdAlone };
    console.log(`\n${label}:`);
    row("miniflare dispatchFetch", mfDispatch);
    row("miniflare own HTTP socket", mfSocket, mfDispatch);
    row("edge platform (workerd + R2 backend)", platform, mfDispatch);
    row("  ceiling: its workerd, no edge", workerdAlone, mfDispatch);
    console.log(`  platform / miniflare socket: ${(platform.rps / mfSocket.rps).toFixed(2)}x`);
  }
  await mf.dispose();

  // 1 GiB through a worker, streamed both ways, sampling the platform process's memory.
  const pid = p.process.pid;
  const before = rssOf(pid);
  let peak = before.rss;
  const sampler = setInterval(() => (peak = Math.max(peak, rssOf(pid).rss)), 50);
  const chunk = Buffer.alloc(1024 * 1024, 7);
  const md5In = createHash("md5");
  let sent = 0;
  const source = Readable.from(
    (function* () {
      while (sent < BIG) {
        const c = chunk.subarray(0, Math.min(chunk.length, BIG - sent));
        sent += c.length;
        md5In.update(c);
        yield c;
      }
    })(),
  );
  let t = Date.now();
  const put = await request(`http://127.0.0.1:${port}/big`, {
    method: "PUT",
    body: source,
    headers: { host: "bench-big.workers.localhost", "content-length": String(BIG) },
  });
  const putBody = await put.body.json();
  const putSecs = (Date.now() - t) / 1000;
  if (put.statusCode !== 200 || putBody.size !== BIG) throw new Error(`big put failed: ${put.statusCode} ${JSON.stringify(putBody)}`);
  t = Date.now();
  const get = await request(`http://127.0.0.1:${port}/big`, { headers: { host: "bench-big.workers.localhost" } });
  const md5Out = createHash("md5");
  let got = 0;
  for await (const c of get.body) {
    got += c.length;
    md5Out.update(c);
  }
  const getSecs = (Date.now() - t) / 1000;
  clearInterval(sampler);
  const after = rssOf(pid);
  const sameBytes = got === BIG && md5In.digest("hex") === md5Out.digest("hex");
  const gib = BIG / 1024 ** 3;
  console.log(
    `\n${gib} GiB through a worker: put ${putSecs.toFixed(1)} s (${(BIG / 1024 ** 2 / putSecs).toFixed(0)} MiB/s), get ${getSecs.toFixed(1)} s (${(BIG / 1024 ** 2 / getSecs).toFixed(0)} MiB/s), bytes intact: ${sameBytes}`,
  );
  console.log(
    `platform RSS: before ${before.rss.toFixed(0)} MiB, peak sampled ${peak.toFixed(0)} MiB, after ${after.rss.toFixed(0)} MiB (VmHWM since start ${after.hwm.toFixed(0)} MiB)`,
  );
  results.big = { bytes: BIG, putSecs, getSecs, sameBytes, rssBeforeMiB: before.rss, rssPeakMiB: peak, hwmMiB: after.hwm };
  const seq = results.sequential;
  console.log(
    `\ngoal (>= 5x miniflare dispatchFetch, sequential): ${(seq.platform.rps / seq.mfDispatch.rps).toFixed(2)}x; 8 concurrent: ${(results["8 concurrent"].platform.rps / results["8 concurrent"].mfDispatch.rps).toFixed(2)}x`,
  );
} finally {
  await mf.dispose().catch(() => {});
  await p.dispose();
}
