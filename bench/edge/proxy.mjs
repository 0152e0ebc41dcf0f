// 1 KiB GET through reverse proxies side by side, wrk at 32 connections: the edge's proxy (a proxied A record),
// nginx proxy_pass, Caddy reverse_proxy and a bare Node pass-through on an undici Pool, all to one nginx origin.
// Run as root (the origin listens on 127.0.0.141:80): node bench/edge/proxy.mjs [seconds] [connections]
import { execFileSync, spawn } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir, cpus, loadavg } from "node:os";
import { get } from "node:http";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startPlatform } from "../lib/platform.mjs";

const seconds = Number(process.argv[2] ?? 10);
const connections = Number(process.argv[3] ?? 32);
const ORIGIN = "127.0.0.141";
const dir = mkdtempSync(join(tmpdir(), "edge-proxy-bench-"));
// nginx's workers run as nobody: they read the file through the directory.
chmodSync(dir, 0o755);
const children = [];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// No file extension: the edge's cache leaves it alone (not eligible by default, `cf-cache-status: DYNAMIC`), so the
// edge's numbers are proxying, not cache HITs (a `.bin` file was cached and the bench measured HITs until 2026-12-06).
writeFileSync(join(dir, "1k"), Buffer.alloc(1024, 97));
writeFileSync(
  join(dir, "nginx.conf"),
  `worker_processes 1; pid ${dir}/nginx.pid; error_log ${dir}/nginx-error.log; daemon off;
events { worker_connections 4096; }
http { access_log off;
  upstream origin { server ${ORIGIN}:80; keepalive 64; }
  server { listen ${ORIGIN}:80; root ${dir}; }
  server { listen 127.0.0.1:18091; location / { proxy_pass http://origin; proxy_http_version 1.1; proxy_set_header Connection ""; } }
}`,
);
writeFileSync(join(dir, "Caddyfile"), `{\n admin off\n}\nhttp://127.0.0.1:18092 {\n reverse_proxy ${ORIGIN}:80\n}\n`);

function start(cmd, args, env = {}) {
  const c = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env } });
  children.push(c);
  c.stderr.on("data", (d) => process.env.BENCH_DEBUG && process.stderr.write(`[${args[0]}] ${d}`));
  return c;
}

function wrk(url, host) {
  const args = ["-t2", `-c${connections}`, `-d${seconds}s`, "--latency", url];
  if (host) args.push("-H", `Host: ${host}`);
  const out = execFileSync("wrk", args, { encoding: "utf8" });
  if (process.env.BENCH_DEBUG) console.error(out);
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0);
  const p50 = /50%\s+([\d.]+\w+)/.exec(out)?.[1];
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? "0";
  return { rps, p50, non2xx };
}

try {
  start("nginx", ["-c", join(dir, "nginx.conf")]);
  start("caddy", ["run", "--config", join(dir, "Caddyfile"), "--adapter", "caddyfile"]);
  // A bare pass-through on an undici Pool, the floor of any Node proxy: in a process of its own (wrk runs
  // synchronously here).
  writeFileSync(
    join(dir, "bare.cjs"),
    `const { createServer } = require("node:http");
const { Pool } = require(${JSON.stringify(fileURLToPath(new URL("../../node_modules/undici/index.js", import.meta.url)))});
const pool = new Pool("http://${ORIGIN}:80", { connections: 256 });
createServer((req, res) => {
  pool.request({ path: req.url, method: req.method, headers: { host: "origin" } }).then(
    (a) => { res.writeHead(a.statusCode, a.headers); a.body.pipe(res); },
    () => res.writeHead(502).end(),
  );
}).listen(18093, "127.0.0.1");`,
  );
  start(process.execPath, [join(dir, "bare.cjs")]);
  const edge = await startPlatform({ port: 18094, stateDir: join(dir, "state"), children });
  await edge.proxiedZone("bench-proxy.example", ORIGIN);
  const probe = await new Promise((resolve, reject) =>
    get({ host: "127.0.0.1", port: 18094, path: "/1k", headers: { host: "www.bench-proxy.example" } }, (res) => {
      res.resume();
      res.on("end", () => resolve(res));
    }).on("error", reject),
  );
  if (probe.statusCode !== 200 || probe.headers["cf-cache-status"] !== "DYNAMIC")
    throw new Error(`the edge's answer is ${probe.statusCode} with cf-cache-status ${probe.headers["cf-cache-status"]}: not a proxied one`);

  // BENCH_ROUNDS rounds (default 1), each running the four in turn; the summary is the median of each one's rounds and
  // of the per-round ratios (on a loaded machine a single run swings by 2×).
  const rounds = Number(process.env.BENCH_ROUNDS ?? 1);
  const all = [];
  for (let r = 0; r < rounds; r++) {
    all.push({
      edge: wrk("http://127.0.0.1:18094/1k", "www.bench-proxy.example"),
      nginx: wrk("http://127.0.0.1:18091/1k"),
      caddy: wrk("http://127.0.0.1:18092/1k"),
      "undici pass-through": wrk("http://127.0.0.1:18093/1k"),
    });
    const x = all[all.length - 1];
    if (rounds > 1)
      console.log(
        `round ${r + 1} (load ${loadavg()[0].toFixed(1)}): ${Object.entries(x)
          .map(([k, v]) => `${k} ${v.rps.toFixed(0)} (p50 ${v.p50})`)
          .join(", ")}; edge/undici ${(x.edge.rps / x["undici pass-through"].rps).toFixed(2)}`,
      );
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const ms = (p50) =>
    p50?.endsWith("us") ? Number(p50.slice(0, -2)) / 1000 : p50?.endsWith("ms") ? Number(p50.slice(0, -2)) : Number(p50?.slice(0, -1)) * 1000;
  const runs = Object.fromEntries(
    Object.keys(all[0]).map((k) => [
      k,
      { rps: median(all.map((x) => x[k].rps)), p50: `${median(all.map((x) => ms(x[k].p50))).toFixed(2)}ms`, non2xx: all.map((x) => x[k].non2xx).join("/") },
    ]),
  );
  console.log(
    `# ${new Date().toISOString()} ${cpus().length} × ${cpus()[0].model}, Node ${process.version}, load ${loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")}`,
  );
  console.log(`# wrk -t2 -c${connections} -d${seconds}s, 1 KiB GET, origin nginx on ${ORIGIN}:80, median of ${rounds} round(s)`);
  for (const [name, r] of Object.entries(runs)) console.log(`${name.padEnd(22)} ${r.rps.toFixed(0).padStart(7)} req/s  p50 ${r.p50}  non-2xx ${r.non2xx}`);
  const e = runs.edge.rps;
  console.log(
    `edge / undici pass-through ${(e / runs["undici pass-through"].rps).toFixed(2)} (median of rounds ${median(all.map((x) => x.edge.rps / x["undici pass-through"].rps)).toFixed(2)}), edge / caddy ${(e / runs.caddy.rps).toFixed(2)}, edge / nginx ${(e / runs.nginx.rps).toFixed(2)}; added p50 ${((ms(runs.edge.p50) - ms(runs["undici pass-through"].p50)) * 1000).toFixed(0)} µs`,
  );
} finally {
  for (const c of children) c.kill("SIGTERM");
  await sleep(500);
  rmSync(dir, { recursive: true, force: true });
}
