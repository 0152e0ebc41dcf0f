// A 1 GiB download and a 1 GiB upload through the edge's proxy (a proxied A record) and through nginx proxy_pass
// (streaming both ways: proxy_buffering and proxy_request_buffering off), to one Node origin on 127.0.0.142:80 that
// sends 1 GiB from memory and counts what it receives. Prints MiB/s of each and the edge's peak RSS (sampled every
// 50 ms from /proc). Run as root: node bench/edge/big-transfer.mjs [MiB]
import { spawn } from "node:child_process";
import { chmodSync, closeSync, ftruncateSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { startPlatform } from "../lib/platform.mjs";

const mib = Number(process.argv[2] ?? 1024);
const bytes = mib * 1024 * 1024;
const ORIGIN = "127.0.0.142";
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
  server { listen 127.0.0.1:18191; client_max_body_size 0;
    location / { proxy_pass http://${ORIGIN}:80; proxy_http_version 1.1; proxy_buffering off; proxy_request_buffering off; } }
}`,
);
// The upload's body: a sparse file (reads as zeros without touching the disk).
const upload = join(dir, "upload.bin");
const fd = openSync(upload, "w");
ftruncateSync(fd, bytes);
closeSync(fd);

const rssOf = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) / 1024;

try {
  start(process.execPath, [join(dir, "origin.cjs")]);
  start("nginx", ["-c", join(dir, "nginx.conf")]);
  const edge = await startPlatform({ port: 18194, stateDir: join(dir, "state"), children });
  await edge.proxiedZone("bench-big.example", ORIGIN);

  const rssBefore = rssOf(edge.pid);
  let peak = rssBefore;
  const sampler = setInterval(() => (peak = Math.max(peak, rssOf(edge.pid))), 50);
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
  runs["edge download"] = await curlAsync([...edgeHost, `http://127.0.0.1:18194/${bytes}`]);
  runs["nginx download"] = await curlAsync([`http://127.0.0.1:18191/${bytes}`]);
  runs["edge upload"] = await curlAsync([...edgeHost, "-T", upload, "http://127.0.0.1:18194/up"]);
  runs["nginx upload"] = await curlAsync(["-T", upload, "http://127.0.0.1:18191/up"]);
  clearInterval(sampler);
  console.log(`# ${new Date().toISOString()} ${cpus().length} × ${cpus()[0].model}, Node ${process.version}, load ${load()}`);
  console.log(`# ${mib} MiB each way through the edge (proxied A record, SSL flexible) and nginx proxy_pass, Node origin on ${ORIGIN}:80`);
  for (const [name, r] of Object.entries(runs)) console.log(`${name.padEnd(16)} status ${r[0]}  ${rate(r).toFixed(0).padStart(5)} MiB/s  (${r[3]} s)`);
  console.log(
    `edge / nginx: download ${(rate(runs["edge download"]) / rate(runs["nginx download"])).toFixed(2)}, upload ${(rate(runs["edge upload"]) / rate(runs["nginx upload"])).toFixed(2)}`,
  );
  console.log(`edge RSS: ${rssBefore.toFixed(0)} MiB before, peak ${peak.toFixed(0)} MiB during the transfers`);
} finally {
  for (const c of children) c.kill("SIGTERM");
  await sleep(500);
  rmSync(dir, { recursive: true, force: true });
}
