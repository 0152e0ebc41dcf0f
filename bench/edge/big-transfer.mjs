// A 1 GiB download and a 1 GiB upload through the edge's proxy (a proxied A record) and through nginx proxy_pass
// (streaming both ways: proxy_buffering and proxy_request_buffering off), to one Node origin on 127.0.0.142:80 that
// sends 1 GiB from memory and counts what it receives. Prints MiB/s of each and the edge's peak RSS (sampled every
// 50 ms from /proc). Run as root: node bench/edge/big-transfer.mjs [MiB]
// Env: BENCH_ROUNDS (default 1: each round does all four transfers, in alternating order); BENCH_PROF_DIR: the edge
// runs with Node's CPU profiler and writes its profile there as it stops (bench/edge/cpu-profile-top.mjs reads it);
// BENCH_ONLY=download|upload: only those transfers; BENCH_EDGE_NODE_ARGS: Node options for the edge's process only
// (e.g. "--max-semi-space-size=4", to see what the young generation's size does to the RSS); BENCH_EDGE_ENV: environment
// of the edge's process only, as NAME=value[,NAME=value] (e.g. MALLOC_TRIM_THRESHOLD_=268435456: glibc keeps freed
// memory instead of trimming its heap, see docs/benchmarks.md). Each transfer's line also gives the minor page faults
// the edge took a GiB (/proc), which the load does not change the way it changes MiB/s. BENCH_MEMORY=1: the edge's V8
// heap and external memory (its metrics) and what its resident memory is made of before and at the peak (/proc smaps).
import { execFileSync, spawn } from "node:child_process";
import { chmodSync, closeSync, ftruncateSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startPlatform } from "../lib/platform.mjs";
import { cpuOf } from "../workers/loops.mjs";

const mib = Number(process.argv[2] ?? 1024);
const bytes = mib * 1024 * 1024;
// BENCH_PORT_BASE=n (default 18190) moves the listeners to n+1..n+5, BENCH_ORIGIN the origin's address (default
// 127.0.0.142): two sessions can run this benchmark at once.
const ORIGIN = process.env.BENCH_ORIGIN ?? "127.0.0.142";
const base = Number(process.env.BENCH_PORT_BASE ?? 18190);
const [NGINX_PORT, BARE_PORT, EDGE_PORT, METRICS_PORT] = [base + 1, base + 2, base + 4, base + 5];
const dir = mkdtempSync(join(tmpdir(), "edge-big-bench-"));
chmodSync(dir, 0o755);
const children = [];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(" ");

function start(cmd, args) {
  const c = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"] });
  children.push(c);
  c.stderr.on("data", (d) => process.env.BENCH_DEBUG && process.stderr.write(`[${args[0]}] ${d}`));
  return c;
}

writeFileSync(
  join(dir, "origin.cjs"),
  `const { createServer } = require("node:http");
const chunk = Buffer.alloc(256 * 1024, 120);
createServer((req, res) => {
  if (req.method === "PUT") {
    let n = 0;
    req.on("data", (d) => (n += d.length));
    req.on("end", () => res.end(String(n)));
    return;
  }
  const total = Number(req.url.slice(1));
  res.writeHead(200, { "content-length": total });
  let left = total;
  const write = () => {
    while (left > 0) {
      const part = left >= chunk.length ? chunk : chunk.subarray(0, left);
      left -= part.length;
      if (!res.write(part)) return void res.once("drain", write);
    }
    res.end();
  };
  write();
}).listen(80, "${ORIGIN}");`,
);
writeFileSync(
  join(dir, "nginx.conf"),
  `worker_processes 1; pid ${dir}/nginx.pid; error_log ${dir}/nginx-error.log; daemon off;
events { worker_connections 1024; }
http { access_log off; client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy;
  server { listen 127.0.0.1:${NGINX_PORT}; client_max_body_size 0;
    location / { proxy_pass http://${ORIGIN}:80; proxy_http_version 1.1; proxy_buffering off; proxy_request_buffering off; } }
}`,
);
// A bare Node http server relaying on an undici Pool (the request body handed to undici as the stream it is): the
// floor of any Node proxy, measured beside the edge so that what is the edge's own and what is Node's can be told apart.
writeFileSync(
  join(dir, "bare.cjs"),
  `const { createServer } = require("node:http");
const { Pool } = require(${JSON.stringify(fileURLToPath(new URL("../../node_modules/undici/index.js", import.meta.url)))});
const pool = new Pool("http://${ORIGIN}:80", { connections: 16 });
createServer((req, res) => {
  const headers = { host: "origin" };
  if (req.headers["content-length"]) headers["content-length"] = req.headers["content-length"];
  pool.request({ path: req.url, method: req.method, headers, body: req.method === "PUT" ? req : null }).then(
    (a) => { res.writeHead(a.statusCode, a.headers); a.body.pipe(res); },
    () => res.writeHead(502).end(),
  );
}).listen(${BARE_PORT}, "127.0.0.1");`,
);
// The upload's body: a sparse file (reads as zeros without touching the disk).
const upload = join(dir, "upload.bin");
const fd = openSync(upload, "w");
ftruncateSync(fd, bytes);
closeSync(fd);

// Minor page faults of a process so far: memory it touched for the first time (or again after giving it back).
const faultsOf = (pid) => Number(readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ")[7]);
const rssOf = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) / 1024;
/**
 * What a process's resident memory is made of, in MiB (BENCH_MEMORY, at each new peak): files mapped (Node's binary,
 * libraries), glibc's main arena (`[heap]`: the main thread's malloc, where Node's socket read buffers live),
 * the other threads' malloc arenas (64 MiB-aligned regions: V8's compiler and GC threads, worker threads), and the
 * rest of the anonymous memory (V8's heap pages, thread stacks, mmap-ed large blocks).
 */
function residentParts(pid) {
  const parts = { files: 0, mainArena: 0, threadArenas: 0, otherAnon: 0 };
  let kind = "otherAnon";
  for (const line of readFileSync(`/proc/${pid}/smaps`, "utf8").split("\n")) {
    const m = /^([0-9a-f]+)-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (m) {
      const start = BigInt(`0x${m[1]}`);
      kind =
        m[2] === "[heap]"
          ? "mainArena"
          : m[2] && !m[2].startsWith("[")
            ? "files"
            : start >= 0x7f0000000000n && start % 0x4000000n === 0n
              ? "threadArenas"
              : "otherAnon";
    } else if (line.startsWith("Rss:")) parts[kind] += Number(line.split(/\s+/)[1]) / 1024;
  }
  return parts;
}

try {
  start(process.execPath, [join(dir, "origin.cjs")]);
  const nginx = start("nginx", ["-c", join(dir, "nginx.conf")]);
  const bare = start(process.execPath, [join(dir, "bare.cjs")]);
  // BENCH_PROF_DIR: a CPU profile of the edge; BENCH_EDGE_NODE_ARGS: Node options of the edge only.
  const nodeArgs = [
    ...(process.env.BENCH_PROF_DIR ? ["--cpu-prof", "--cpu-prof-dir", process.env.BENCH_PROF_DIR] : []),
    ...(process.env.BENCH_EDGE_NODE_ARGS?.split(" ").filter(Boolean) ?? []),
  ];
  // BENCH_MEMORY reads the edge's own metrics: on a port of this benchmark's own then.
  const env = Object.fromEntries(
    (process.env.BENCH_EDGE_ENV ?? "")
      .split(",")
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]),
  );
  const edge = await startPlatform({
    port: EDGE_PORT,
    stateDir: join(dir, "state"),
    children,
    nodeArgs,
    env,
    // BENCH_EDGE_ARGS="--edge-threads 2": more serve options for the edge.
    args: process.env.BENCH_EDGE_ARGS?.split(" ").filter(Boolean) ?? [],
    metricsPort: process.env.BENCH_MEMORY ? METRICS_PORT : 0,
  });
  await edge.proxiedZone("bench-big.example", ORIGIN);

  // BENCH_IDLE_SECONDS: wait that long after the start first (V8's memory reducer shrinks the young generation of an
  // idle process after ~10-30 s; by default the first transfer starts at once, the worst case for the peak).
  await sleep(Number(process.env.BENCH_IDLE_SECONDS ?? 0) * 1000);
  const rssBefore = rssOf(edge.pid);
  let peak = rssBefore;
  let partsAtPeak;
  const sampler = setInterval(() => {
    const rss = rssOf(edge.pid);
    if (rss <= peak) return;
    peak = rss;
    if (process.env.BENCH_MEMORY) partsAtPeak = residentParts(edge.pid);
  }, 50);
  const partsBefore = process.env.BENCH_MEMORY && residentParts(edge.pid);
  // BENCH_MEMORY=1: what the RSS is made of, from the edge's own metrics (V8 heap, memory outside it), every 250 ms.
  const parts = { heap: 0, external: 0 };
  const memorySampler =
    process.env.BENCH_MEMORY &&
    setInterval(async () => {
      const text = await (await fetch(`http://127.0.0.1:${METRICS_PORT}/metrics`)).text().catch(() => "");
      const read = (name) => Number(new RegExp(`^\\w*${name} (\\S+)`, "m").exec(text)?.[1] ?? 0) / 1048576;
      parts.heap = Math.max(parts.heap, read("nodejs_heap_size_total_bytes"));
      parts.external = Math.max(parts.external, read("nodejs_external_memory_bytes"));
    }, 250);
  const rate = (r) => (Number(r[1] || 0) + Number(r[2] || 0)) / 1048576 / Number(r[3]);
  const runs = {};
  const edgeHost = ["-H", "Host: www.bench-big.example"];
  // Each transfer runs in a child curl; the sampler keeps running meanwhile (execFileSync would block it, so async).
  const curlAsync = (args) =>
    new Promise((resolve, reject) => {
      const c = spawn("curl", ["-sS", "-o", "/dev/null", "-w", "%{http_code} %{size_download} %{size_upload} %{time_total}", ...args]);
      let out = "";
      c.stdout.on("data", (d) => (out += d));
      c.on("close", (code) => (code === 0 ? resolve(out.split(" ")) : reject(new Error(`curl exited ${code}`))));
    });
  const nginxWorker = Number(
    execFileSync("pgrep", ["-P", String(nginx.pid)], { encoding: "utf8" })
      .trim()
      .split("\n")[0],
  );
  const only = process.env.BENCH_ONLY;
  const rounds = Number(process.env.BENCH_ROUNDS ?? 1);
  const cases = {
    "edge download": () => curlAsync([...edgeHost, `http://127.0.0.1:${EDGE_PORT}/${bytes}`]),
    "nginx download": () => curlAsync([`http://127.0.0.1:${NGINX_PORT}/${bytes}`]),
    "edge upload": () => curlAsync([...edgeHost, "-T", upload, `http://127.0.0.1:${EDGE_PORT}/up`]),
    "nginx upload": () => curlAsync(["-T", upload, `http://127.0.0.1:${NGINX_PORT}/up`]),
    "bare download": () => curlAsync([`http://127.0.0.1:${BARE_PORT}/${bytes}`]),
    "bare upload": () => curlAsync(["-T", upload, `http://127.0.0.1:${BARE_PORT}/up`]),
  };
  const byRound = [];
  for (let round = 0; round < rounds; round++) {
    // BENCH_BARE=1 adds the bare undici pass-through to each round.
    const names = Object.keys(cases).filter((n) => (!only || n.endsWith(only)) && (process.env.BENCH_BARE || !n.startsWith("bare")));
    // Alternating which of the pair goes first, so that a change of load does not favour one.
    if (round % 2 === 1) for (let i = 0; i + 1 < names.length; i += 2) [names[i], names[i + 1]] = [names[i + 1], names[i]];
    const got = {};
    for (const name of names) {
      // CPU seconds the proxy itself spent on the transfer (the edge: every thread of its process; nginx: its worker).
      const pid = name.startsWith("edge") ? edge.pid : name.startsWith("bare") ? bare.pid : nginxWorker;
      const cpu0 = cpuOf(pid);
      const faults0 = faultsOf(pid);
      got[name] = await cases[name]();
      got[name].cpu = (cpuOf(pid) - cpu0) / 1e6;
      got[name].faults = faultsOf(pid) - faults0;
    }
    byRound.push(got);
    const ratio = (kind) => (got[`edge ${kind}`] ? (rate(got[`edge ${kind}`]) / rate(got[`nginx ${kind}`])).toFixed(2) : "-");
    const cpuRatio = (kind) => (got[`edge ${kind}`] ? (got[`edge ${kind}`].cpu / got[`nginx ${kind}`].cpu).toFixed(1) : "-");
    const bareRatio = (kind) => (got[`bare ${kind}`] ? `, bare ${(rate(got[`bare ${kind}`]) / rate(got[`nginx ${kind}`])).toFixed(2)}` : "");
    if (rounds > 1)
      console.log(
        `round ${round + 1}: edge / nginx download ${ratio("download")}${bareRatio("download")}, upload ${ratio("upload")}${bareRatio("upload")}; CPU a byte edge / nginx: download ${cpuRatio("download")}×, upload ${cpuRatio("upload")}×; MiB/s ${names.map((n) => `${n} ${rate(got[n]).toFixed(0)}`).join(", ")}; edge page faults a GiB ${names
          .filter((n) => n.startsWith("edge"))
          .map((n) => Math.round((got[n].faults * 1024) / mib))
          .join(", ")}; load ${load()}`,
      );
  }
  // The round with the median upload (else download) ratio is the one printed in full.
  const key = only === "download" ? "download" : "upload";
  const r = (got) => rate(got[`edge ${key}`]) / rate(got[`nginx ${key}`]);
  Object.assign(runs, [...byRound].sort((a, b) => r(a) - r(b))[Math.floor(byRound.length / 2)]);
  clearInterval(sampler);
  if (memorySampler) clearInterval(memorySampler);
  console.log(`# ${new Date().toISOString()} ${cpus().length} × ${cpus()[0].model}, Node ${process.version}, load ${load()}`);
  console.log(`# ${mib} MiB each way through the edge (proxied A record, SSL flexible) and nginx proxy_pass, Node origin on ${ORIGIN}:80`);
  for (const [name, r] of Object.entries(runs))
    console.log(
      `${name.padEnd(16)} status ${r[0]}  ${rate(r).toFixed(0).padStart(5)} MiB/s  (${r[3]} s; the proxy's CPU ${((r.cpu * 1024) / mib).toFixed(2)} s a GiB, ${Math.round((r.faults * 1024) / mib)} minor page faults a GiB)`,
    );
  const ratio = (kind) => (runs[`edge ${kind}`] ? (rate(runs[`edge ${kind}`]) / rate(runs[`nginx ${kind}`])).toFixed(2) : "-");
  console.log(`edge / nginx: download ${ratio("download")}, upload ${ratio("upload")}`);
  console.log(`edge RSS: ${rssBefore.toFixed(0)} MiB before, peak ${peak.toFixed(0)} MiB during the transfers`);
  if (memorySampler) {
    console.log(`edge memory (peaks): V8 heap ${parts.heap.toFixed(0)} MiB, external ${parts.external.toFixed(0)} MiB`);
    const show = (p) =>
      p
        ? Object.entries(p)
            .map(([k, v]) => `${k} ${v.toFixed(0)}`)
            .join(", ")
        : "-";
    console.log(`edge resident MiB before: ${show(partsBefore)}; at the peak: ${show(partsAtPeak)}`);
  }
} finally {
  for (const c of children) c.kill("SIGTERM");
  await sleep(500);
  rmSync(dir, { recursive: true, force: true });
}
