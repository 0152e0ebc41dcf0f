// 1 KiB GET through reverse proxies side by side, wrk at 32 connections: the edge's proxy (a proxied A record),
// nginx proxy_pass, Caddy reverse_proxy and a bare Node pass-through on an undici Pool, all to one nginx origin.
// Run as root (the origin listens on 127.0.0.141:80): node bench/edge/proxy.mjs [seconds] [connections]
// Each one's CPU per request (user + system from /proc/<pid>/stat over its wrk run, the process and its children, over
// the requests wrk counted) is reported beside req/s: load on the shared machine distorts it much less than req/s.
// BENCH_BEFORE=path/to/dist/bin/edgecli.js: another build's edge side by side ("edge before", e.g. main's build).
import { execFileSync, spawn } from "node:child_process";
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir, cpus, loadavg } from "node:os";
import { get } from "node:http";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { treeCpuSeconds } from "../dns/proc-stats.mjs";
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

/** CPU seconds per thread of a process, by thread name (/proc/<pid>/task/<tid>/comm: libuv, V8, workers), the main one as `main`. */
function threadCpuSeconds(pid) {
  const out = new Map();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      // Node's worker threads keep the main thread's name: the main one is told apart by its id.
      const name = Number(tid) === pid ? "main" : readFileSync(`/proc/${pid}/task/${tid}/comm`, "utf8").trim();
      const f = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8").split(") ")[1].split(" ");
      out.set(name, (out.get(name) ?? 0) + (Number(f[11]) + Number(f[12])) / 100);
    } catch {
      /* exited meanwhile */
    }
  }
  return out;
}

/** wrk against `url`; `pid`: the server whose CPU per request is measured over the run (µs). */
function wrk(url, pid, host, duration = seconds) {
  const args = ["-t2", `-c${connections}`, `-d${duration}s`, "--latency", url];
  if (host) args.push("-H", `Host: ${host}`);
  const cpuBefore = treeCpuSeconds(pid);
  const threadsBefore = process.env.BENCH_THREADS ? threadCpuSeconds(pid) : undefined;
  const out = execFileSync("wrk", args, { encoding: "utf8" });
  const cpu = treeCpuSeconds(pid) - cpuBefore;
  const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? 0);
  // BENCH_THREADS=1: which of the server's threads the CPU per request went to (µs).
  if (threadsBefore && requests)
    console.log(
      `  ${url} threads: ${[...threadCpuSeconds(pid)]
        .map(([name, s]) => [name, ((s - (threadsBefore.get(name) ?? 0)) * 1e6) / requests])
        .filter(([, us]) => us >= 0.5)
        .map(([name, us]) => `${name} ${us.toFixed(1)} µs`)
        .join(", ")}`,
    );
  if (process.env.BENCH_DEBUG) console.error(out);
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0);
  const p50 = /50%\s+([\d.]+\w+)/.exec(out)?.[1];
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? "0";
  return { rps, p50, non2xx, cpuUs: requests ? (cpu * 1e6) / requests : 0 };
}

try {
  const nginx = start("nginx", ["-c", join(dir, "nginx.conf")]);
  const caddy = start("caddy", ["run", "--config", join(dir, "Caddyfile"), "--adapter", "caddyfile"]);
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
}).listen(18093, "127.0.0.1");
// A profile (--cpu-prof) is written at exit, which SIGTERM's default would skip.
process.on("SIGTERM", () => process.exit(0));`,
  );
  // BENCH_PROFILE_DIR=dir: the edge (this build's) and the undici pass-through write V8 CPU profiles there
  // (bench/edge/cpu-profile-top.mjs reads them; BUSIEST_SECONDS picks each one's counted run).
  const profile = process.env.BENCH_PROFILE_DIR ? ["--cpu-prof", "--cpu-prof-dir", process.env.BENCH_PROFILE_DIR] : [];
  const bare = start(process.execPath, [...profile, join(dir, "bare.cjs")]);
  const edges = [["edge", 18094, undefined]];
  if (process.env.BENCH_BEFORE) edges.push(["edge before", 18097, process.env.BENCH_BEFORE]);
  const platforms = {};
  for (const [name, port, cliPath] of edges) {
    const edge = await startPlatform({ port, stateDir: join(dir, `state-${port}`), children, ...(cliPath ? { cliPath } : { nodeArgs: profile }) });
    await edge.proxiedZone("bench-proxy.example", ORIGIN);
    const probe = await new Promise((resolve, reject) =>
      get({ host: "127.0.0.1", port, path: "/1k", headers: { host: "www.bench-proxy.example" } }, (res) => {
        res.resume();
        res.on("end", () => resolve(res));
      }).on("error", reject),
    );
    if (probe.statusCode !== 200 || probe.headers["cf-cache-status"] !== "DYNAMIC")
      throw new Error(`${name}'s answer is ${probe.statusCode} with cf-cache-status ${probe.headers["cf-cache-status"]}: not a proxied one`);
    platforms[name] = { port, pid: edge.pid };
  }

  // BENCH_HOLD=1: the servers started, their URLs and pids printed, and nothing measured until Ctrl-C (for strace -c,
  // perf record or wrk by hand against one of them).
  if (process.env.BENCH_HOLD) {
    for (const [name, { port, pid }] of Object.entries(platforms))
      console.log(`${name}: http://127.0.0.1:${port}/1k (Host: www.bench-proxy.example), pid ${pid}`);
    console.log(`undici pass-through: http://127.0.0.1:18093/1k, pid ${bare.pid}; nginx proxy_pass :18091, caddy :18092`);
    await new Promise((resolve) => process.once("SIGINT", resolve).once("SIGTERM", resolve));
    for (const c of children) c.kill("SIGTERM");
    await sleep(500);
    rmSync(dir, { recursive: true, force: true });
    process.exit(0);
  }
  // BENCH_ROUNDS rounds (default 1), each running the four in turn; the summary is the median of each one's rounds and
  // of the per-round ratios (on a loaded machine a single run swings by 2×).
  const rounds = Number(process.env.BENCH_ROUNDS ?? 1);
  // A warm-up of each (not counted): the first seconds of a Node server run its code unoptimised.
  const servers = [
    ...Object.values(platforms).map(({ port, pid }) => [`http://127.0.0.1:${port}/1k`, pid, "www.bench-proxy.example"]),
    ["http://127.0.0.1:18091/1k", nginx.pid],
    ["http://127.0.0.1:18092/1k", caddy.pid],
    ["http://127.0.0.1:18093/1k", bare.pid],
  ];
  for (const [url, pid, host] of servers) wrk(url, pid, host, 2);
  const all = [];
  for (let r = 0; r < rounds; r++) {
    const x = {};
    // Two edges (BENCH_BEFORE): each round starts with the other one, so neither is always first.
    const order = r % 2 === 0 ? Object.entries(platforms) : Object.entries(platforms).reverse();
    for (const [name, { port, pid }] of order) x[name] = wrk(`http://127.0.0.1:${port}/1k`, pid, "www.bench-proxy.example");
    // BENCH_PEERS=0: the counted rounds leave nginx and Caddy out (a quicker A/B of the edges against the floor).
    if (process.env.BENCH_PEERS !== "0") {
      x.nginx = wrk("http://127.0.0.1:18091/1k", nginx.pid);
      x.caddy = wrk("http://127.0.0.1:18092/1k", caddy.pid);
    }
    x["undici pass-through"] = wrk("http://127.0.0.1:18093/1k", bare.pid);
    all.push(x);
    if (rounds > 1)
      console.log(
        `round ${r + 1} (load ${loadavg()[0].toFixed(1)}): ${Object.entries(x)
          .map(([k, v]) => `${k} ${v.rps.toFixed(0)} (p50 ${v.p50}, ${v.cpuUs.toFixed(0)} µs CPU)`)
          .join(", ")}; edge/undici ${(x.edge.rps / x["undici pass-through"].rps).toFixed(2)}`,
      );
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const ms = (p50) =>
    p50?.endsWith("us") ? Number(p50.slice(0, -2)) / 1000 : p50?.endsWith("ms") ? Number(p50.slice(0, -2)) : Number(p50?.slice(0, -1)) * 1000;
  const runs = Object.fromEntries(
    Object.keys(all[0]).map((k) => [
      k,
      {
        rps: median(all.map((x) => x[k].rps)),
        p50: `${median(all.map((x) => ms(x[k].p50))).toFixed(2)}ms`,
        cpuUs: median(all.map((x) => x[k].cpuUs)),
        non2xx: all.map((x) => x[k].non2xx).join("/"),
      },
    ]),
  );
  console.log(
    `# ${new Date().toISOString()} ${cpus().length} × ${cpus()[0].model}, Node ${process.version}, load ${loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")}`,
  );
  console.log(`# wrk -t2 -c${connections} -d${seconds}s, 1 KiB GET, origin nginx on ${ORIGIN}:80, median of ${rounds} round(s)`);
  for (const [name, r] of Object.entries(runs))
    console.log(
      `${name.padEnd(22)} ${r.rps.toFixed(0).padStart(7)} req/s  p50 ${r.p50}  CPU ${r.cpuUs.toFixed(0).padStart(4)} µs/request  non-2xx ${r.non2xx}`,
    );
  const floor = runs["undici pass-through"];
  for (const name of Object.keys(platforms)) {
    const e = runs[name];
    console.log(
      `${name} / undici pass-through ${(e.rps / floor.rps).toFixed(2)} (median of rounds ${median(all.map((x) => x[name].rps / x["undici pass-through"].rps)).toFixed(2)}), / caddy ${runs.caddy ? (e.rps / runs.caddy.rps).toFixed(2) : "-"}, / nginx ${runs.nginx ? (e.rps / runs.nginx.rps).toFixed(2) : "-"}; added p50 ${((ms(e.p50) - ms(floor.p50)) * 1000).toFixed(0)} µs; CPU per request ${(e.cpuUs / floor.cpuUs).toFixed(2)}× the floor's (+${(e.cpuUs - floor.cpuUs).toFixed(0)} µs)`,
    );
  }
} finally {
  for (const c of children) c.kill("SIGTERM");
  await sleep(500);
  rmSync(dir, { recursive: true, force: true });
}
