// Cache HITs of a 1 KiB object side by side, wrk at 32 connections: the edge's cache (a proxied A record, the
// object cached), nginx proxy_cache, Varnish, and a bare Node http server answering a fixed 1 KiB body (the ceiling
// of any hit Node serves). Then a purge of one Cache-Tag among 100,000 cached objects through the v4 API (median of 20).
// Run as root (the origin listens on 127.0.0.142:80): node bench/cache/cache.mjs [seconds] [connections]
import { execFileSync, spawn } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const seconds = Number(process.argv[2] ?? 10);
const connections = Number(process.argv[3] ?? 32);
const ORIGIN = "127.0.0.142";
const dir = mkdtempSync(join(tmpdir(), "edge-cache-bench-"));
chmodSync(dir, 0o755);
const children = [];
const cli = fileURLToPath(new URL("../../dist/bin/edgecli.js", import.meta.url));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

writeFileSync(join(dir, "1k.js"), Buffer.alloc(1024, 97));
writeFileSync(join(dir, "100m.bin"), Buffer.alloc(100 * 1024 * 1024, 98));
writeFileSync(
  join(dir, "nginx.conf"),
  `worker_processes 1; pid ${dir}/nginx.pid; error_log ${dir}/nginx-error.log; daemon off;
events { worker_connections 4096; }
http { access_log off;
  proxy_cache_path ${dir}/nginx-cache keys_zone=c:10m;
  upstream origin { server ${ORIGIN}:80; keepalive 64; }
  server { listen ${ORIGIN}:80; root ${dir}; location / { add_header Cache-Control "max-age=3600"; } }
  server { listen 127.0.0.1:18191; location / { proxy_cache c; proxy_cache_valid 200 1h; proxy_pass http://origin; proxy_http_version 1.1; proxy_set_header Connection ""; } }
}`,
);
writeFileSync(
  join(dir, "bare.cjs"),
  `const body = Buffer.alloc(1024, 97);
require("node:http").createServer((req, res) => { res.writeHead(200, { "content-type": "text/javascript", "content-length": 1024 }); res.end(body); }).listen(18193, "127.0.0.1");`,
);

function start(cmd, args) {
  const c = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"] });
  children.push(c);
  c.stderr.on("data", (d) => process.env.BENCH_DEBUG && process.stderr.write(`[${cmd}] ${d}`));
  return c;
}

function wrk(url, host) {
  const args = ["-t2", `-c${connections}`, `-d${seconds}s`, "--latency", url];
  if (host) args.push("-H", `Host: ${host}`);
  const out = execFileSync("wrk", args, { encoding: "utf8" });
  if (process.env.BENCH_DEBUG) console.error(out);
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0),
    p50: /50%\s+([\d.]+\w+)/.exec(out)?.[1],
    non2xx: /Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? "0",
  };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

try {
  start("nginx", ["-c", join(dir, "nginx.conf")]);
  start("varnishd", ["-F", "-n", join(dir, "varnish"), "-a", "127.0.0.1:18192", "-b", `${ORIGIN}:80`, "-s", "malloc,64m"]);
  start(process.execPath, [join(dir, "bare.cjs")]);
  const state = join(dir, "state");
  const edge = start(process.execPath, [
    cli,
    "serve",
    "--port",
    "18194",
    "--dns-port",
    "0",
    "--dns-workers",
    "0",
    "--state-dir",
    state,
    "--origin-allow",
    "127.0.0.0/8",
    "--log-level",
    "warn",
  ]);
  let banner = "";
  edge.stderr.on("data", (d) => (banner += d));
  for (let i = 0; i < 900 && !/API token/.test(banner); i++) await sleep(200);
  if (!/API token/.test(banner)) throw new Error(`the edge did not start: ${banner}`);
  const token = /API token\s+(\S+)/.exec(banner)[1];
  const account = /account id\s+(\S+)/.exec(banner)[1];
  // A new connection per call (node:http without an agent): a kept-alive one may have been closed meanwhile.
  const api = (method, path, body) =>
    new Promise((resolve, reject) => {
      const req = httpRequest(
        `http://127.0.0.1:18194/client/v4${path}`,
        { method, agent: false, headers: { authorization: `Bearer ${token}`, "content-type": "application/json" } },
        (res) => {
          let text = "";
          res.on("data", (d) => (text += d));
          res.on("end", () => resolve(JSON.parse(text)));
        },
      );
      req.once("error", reject);
      req.end(JSON.stringify(body));
    });
  const zone = (await api("POST", "/zones", { name: "bench-cache.example", account: { id: account } })).result.id;
  await api("POST", `/zones/${zone}/dns_records`, { type: "A", name: "www", content: ORIGIN, proxied: true });
  await sleep(1000);
  // Warm every cache, and check the edge answers HIT (curl: fetch() does not send a Host of our choosing).
  const curl = (url, host) => execFileSync("curl", ["-s", "-o", "/dev/null", "-D", "-", ...(host ? ["-H", `Host: ${host}`] : []), url], { encoding: "utf8" });
  for (let i = 0; i < 3; i++) {
    curl("http://127.0.0.1:18194/1k.js", "www.bench-cache.example");
    curl("http://127.0.0.1:18191/1k.js");
    curl("http://127.0.0.1:18192/1k.js");
  }
  const check = /cf-cache-status: (\w+)/i.exec(curl("http://127.0.0.1:18194/1k.js", "www.bench-cache.example"))?.[1];
  if (check !== "HIT") throw new Error(`the edge answered ${check}, not HIT`);

  const runs = {
    "edge cache HIT": wrk("http://127.0.0.1:18194/1k.js", "www.bench-cache.example"),
    "nginx proxy_cache": wrk("http://127.0.0.1:18191/1k.js"),
    varnish: wrk("http://127.0.0.1:18192/1k.js"),
    "bare node (fixed body)": wrk("http://127.0.0.1:18193/1k.js"),
  };
  const load = loadavg()
    .map((l) => l.toFixed(1))
    .join(" ");
  console.log(`# ${new Date().toISOString()} ${cpus().length} × ${cpus()[0].model}, Node ${process.version}, load ${load}`);
  console.log(`# wrk -t2 -c${connections} -d${seconds}s, 1 KiB GET, origin nginx on ${ORIGIN}:80`);
  for (const [name, r] of Object.entries(runs)) console.log(`${name.padEnd(24)} ${r.rps.toFixed(0).padStart(7)} req/s  p50 ${r.p50}  non-2xx ${r.non2xx}`);
  const e = runs["edge cache HIT"].rps;
  console.log(
    `edge / bare node ${(e / runs["bare node (fixed body)"].rps).toFixed(2)}, edge / nginx ${(e / runs["nginx proxy_cache"].rps).toFixed(2)}, edge / varnish ${(e / runs.varnish.rps).toFixed(2)}`,
  );

  // A 100 MiB object, cached by the edge and nginx: MB/s of three downloads each (curl), and the edge's RSS.
  const download = (url, host) => {
    const out = execFileSync("curl", ["-s", "-o", "/dev/null", "-w", "%{speed_download} %{size_download}", ...(host ? ["-H", `Host: ${host}`] : []), url], {
      encoding: "utf8",
    });
    const [speed, size] = out.split(" ").map(Number);
    if (size !== 100 * 1024 * 1024) throw new Error(`${url}: ${size} bytes`);
    return speed / 1e6;
  };
  for (let i = 0; i < 2; i++) {
    download("http://127.0.0.1:18194/100m.bin", "www.bench-cache.example");
    download("http://127.0.0.1:18191/100m.bin");
  }
  const big = { edge: [], nginx: [] };
  for (let i = 0; i < 3; i++) {
    big.edge.push(download("http://127.0.0.1:18194/100m.bin", "www.bench-cache.example"));
    big.nginx.push(download("http://127.0.0.1:18191/100m.bin"));
  }
  const status = readFileSync(`/proc/${edge.pid}/status`, "utf8");
  const kib = (name) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) / 1024;
  console.log(
    `100 MiB HIT: edge median ${median(big.edge).toFixed(0)} MB/s, nginx proxy_cache ${median(big.nginx).toFixed(0)} MB/s (${(median(big.edge) / median(big.nginx)).toFixed(2)}); edge RSS ${kib("VmRSS").toFixed(0)} MiB, peak ${kib("VmHWM").toFixed(0)} MiB`,
  );

  // 100,000 objects in the running node's index (written beside it, as fills would: 1,000 tags of 100 objects).
  const { DiskIndex } = await import("../../dist/edge/cache/disk-index.js");
  const index = new DiskIndex(join(state, "cache", "index.sqlite"));
  const now = Date.now();
  for (let b = 0; b < 100; b++)
    index.transaction(() => {
      for (let i = b * 1000; i < (b + 1) * 1000; i++) {
        const url = `http://www.bench-cache.example/o/${i}.js`;
        index.put(
          {
            key: `${zone}\n${url}\n`,
            zoneId: zone,
            url,
            file: `zz/${i}`,
            size: 1024,
            status: 200,
            headers: [],
            storedAt: now,
            initialAge: 0,
            freshUntil: now + 3.6e6,
            staleWhileRevalidate: 0,
            staleIfError: 0,
          },
          [`tag-${i % 1000}`],
        );
      }
    });
  const total = index.count();
  index.close();
  const times = [];
  for (let i = 0; i < 20; i++) {
    const t0 = performance.now();
    const r = await api("POST", `/zones/${zone}/purge_cache`, { tags: [`tag-${i}`] });
    times.push(performance.now() - t0);
    if (!r.success) throw new Error(JSON.stringify(r));
  }
  const baseline = [];
  for (let i = 0; i < 20; i++) {
    const t0 = performance.now();
    await api("GET", `/zones/${zone}/settings/ssl`);
    baseline.push(performance.now() - t0);
  }
  console.log(`for scale, GET /zones/{id}/settings/ssl (the API's own work): median ${median(baseline).toFixed(1)} ms`);
  console.log(
    `purge of one tag (100 objects) among ${total} objects via the API: median ${median(times).toFixed(1)} ms, max ${Math.max(...times).toFixed(1)} ms (20 purges), load ${loadavg()[0].toFixed(1)}`,
  );
} finally {
  for (const c of children) c.kill("SIGTERM");
  await sleep(500);
  rmSync(dir, { recursive: true, force: true });
}
