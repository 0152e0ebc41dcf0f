// Issue 33 item 7: can any design that keeps the hop through the edge's Node process reach 0.75 of workerd asked
// directly? Four paths to one Worker's workerd unix socket, in rotating order each round, with the same keep-alive
// client loops (undici Pool, bench/workers/loops.mjs); the Worker answers 1 KiB without bindings:
//   direct   workerd's socket itself (the ceiling);
//   edge     the platform's edge port, as now;
//   pipe     a bare byte pipe (bench/edge/worker-pipe-floor.mjs pipe): the ceiling of any hop;
//   scanned  the byte pipe plus the least per-request work an edge needs on a Worker-only hostname (each request head
//            found, checked and rewritten, each body's end found, each answer head found, cf-ray added, counted);
//   nginx    nginx (one worker process) proxy_pass to the socket with kept-alive connections, adding the same request
//            headers: an HTTP-parsing hop that is not Node;
//   nginx-pipe nginx's stream module (the same worker process) piping bytes to the socket: a byte pipe that is not
//            Node (left out when Debian's libnginx-mod-stream is not installed).
// The pipes run as their own Node processes with the bin's Node flags. Prints each round (req/s, each / direct, CPU a
// request of the process in front, of workerd and of this client) and the medians, with each path's "chain CPU
// ratio": direct's client + workerd CPU a request over the path's client + workerd + front (the req/s ratio if the
// machine were CPU-bound; load moves it far less than req/s).
// Env: BENCH_SECONDS (per case, default 3), BENCH_ROUNDS (default 3), BENCH_CLIENTS (default 1,8), BENCH_PATHS
// (default direct,edge,pipe,scanned,nginx,nginx-pipe), BENCH_FLOOR_NODE_ARGS (Node options for the pipes' processes).
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { once } from "node:events";
import { loadavg } from "node:os";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { Pool } from "../../node_modules/undici/index.js";
import { BIN_NODE_FLAGS, startTestPlatform } from "../../dist/core/testing/platform.js";
import { cpuOf, timedLoops } from "../workers/loops.mjs";
import { EDGE_BENCH_WORKERS, scriptInfo, uploadWorker } from "../workers/upload.mjs";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CLIENTS = (process.env.BENCH_CLIENTS ?? "1,8").split(",").map(Number);
const STREAM_MODULE = "/usr/lib/nginx/modules/ngx_stream_module.so";
const PATHS = (process.env.BENCH_PATHS ?? `direct,edge,pipe,scanned,nginx${existsSync(STREAM_MODULE) ? ",nginx-pipe" : ""}`).split(",");
// Other Node options for the two pipe processes (e.g. `--cpu-prof --cpu-prof-dir=DIR`: a profile each as they stop).
const FLOOR_NODE_ARGS = process.env.BENCH_FLOOR_NODE_ARGS?.split(" ").filter(Boolean) ?? [];
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(" ");
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Starts one floor process; resolves with its pid, port and a way to read what it counted. */
async function startFloor(mode, socketPath, host) {
  const child = spawn(
    process.execPath,
    [...BIN_NODE_FLAGS, ...FLOOR_NODE_ARGS, fileURLToPath(new URL("./worker-pipe-floor.mjs", import.meta.url)), mode, socketPath, host],
    {
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  const lines = createInterface({ input: child.stdout });
  const [first] = await once(lines, "line");
  return {
    pid: child.pid,
    port: JSON.parse(first).port,
    counts: async () => {
      child.kill("SIGUSR2");
      const [line] = await once(lines, "line");
      return JSON.parse(line);
    },
    stop: () => child.kill("SIGTERM"),
  };
}

/** nginx with one worker process in front of the socket; resolves with its worker's pid and ports (HTTP, stream). */
async function startNginx(socketPath) {
  const dir = mkdtempSync(join(tmpdir(), "worker-floors-nginx-"));
  const port = 20000 + Math.floor(Math.random() * 20000);
  const streamPort = port + 1;
  const stream = PATHS.includes("nginx-pipe");
  writeFileSync(
    join(dir, "nginx.conf"),
    `${stream ? `load_module ${STREAM_MODULE};` : ""}
user root; worker_processes 1; pid ${dir}/nginx.pid; error_log ${dir}/error.log; daemon off;
events { worker_connections 1024; }
http { access_log off;
  upstream workerd { server unix:${socketPath}; keepalive 32; }
  server { listen 127.0.0.1:${port}; location / { proxy_pass http://workerd; proxy_http_version 1.1; proxy_set_header Connection "";
    proxy_set_header cf-connecting-ip $remote_addr; proxy_set_header x-forwarded-proto $scheme; proxy_buffering off; } }
}
${stream ? `stream { server { listen 127.0.0.1:${streamPort}; proxy_pass unix:${socketPath}; } }` : ""}`,
  );
  const child = spawn("nginx", ["-c", join(dir, "nginx.conf")], { stdio: "ignore" });
  // The worker process (nginx's master only forks it): found as the master's child.
  let worker;
  for (let i = 0; i < 100 && !worker; i++) {
    await new Promise((r) => setTimeout(r, 100));
    try {
      worker = Number(readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, "utf8").trim().split(" ")[0]) || undefined;
    } catch {
      /* not yet */
    }
  }
  return { pid: worker, port, streamPort, stop: () => child.kill("SIGTERM") };
}

const p = await startTestPlatform({ args: ["--dns-port", "0"] });
const floors = [];
try {
  await uploadWorker(p, "ratio-plain", EDGE_BENCH_WORKERS.plain.code, []);
  const port = new URL(p.url).port;
  // The platform's log (which names the live workerd's socket) is written asynchronously.
  let info;
  for (let i = 0; i < 100 && !info; i++) {
    try {
      info = scriptInfo(p, "ratio-plain");
    } catch {
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  const socketPath = info.socket.socketPath;
  const host = "ratio-plain.workers.localhost";
  const pipe = await startFloor("pipe", socketPath, host);
  const scanned = await startFloor("scanned", socketPath, host);
  floors.push(pipe, scanned);
  const nginx = PATHS.includes("nginx") || PATHS.includes("nginx-pipe") ? await startNginx(socketPath) : undefined;
  if (nginx) floors.push(nginx);
  console.log(
    `# ${new Date().toISOString()} load ${load()}; ${ROUNDS} rounds of ${SECONDS} s; a Worker answering 1 KiB; paths ${PATHS.join(", ")}; Node ${process.version} ${BIN_NODE_FLAGS.join(" ")}`,
  );
  const paths = {
    direct: { pool: (c) => new Pool("http://localhost", { connections: c, socketPath }), headers: {}, pid: undefined },
    edge: { pool: (c) => new Pool(`http://127.0.0.1:${port}`, { connections: c }), headers: { host: `${host}:${port}` }, pid: p.process.pid },
    pipe: { pool: (c) => new Pool(`http://127.0.0.1:${pipe.port}`, { connections: c }), headers: { host }, pid: pipe.pid },
    nginx: nginx && { pool: (c) => new Pool(`http://127.0.0.1:${nginx.port}`, { connections: c }), headers: { host }, pid: nginx.pid },
    "nginx-pipe": nginx && { pool: (c) => new Pool(`http://127.0.0.1:${nginx.streamPort}`, { connections: c }), headers: { host }, pid: nginx.pid },
    scanned: { pool: (c) => new Pool(`http://127.0.0.1:${scanned.port}`, { connections: c }), headers: { host }, pid: scanned.pid },
  };
  let scannedRequests = 0;
  for (const clients of CLIENTS) {
    const rates = Object.fromEntries(PATHS.map((k) => [k, []]));
    const ratios = Object.fromEntries(PATHS.map((k) => [k, []]));
    const cpus = Object.fromEntries(PATHS.map((k) => [k, []]));
    const workerdCpus = Object.fromEntries(PATHS.map((k) => [k, []]));
    // The chain's CPU a request (client + workerd + the process in front), direct's over each path's: the req/s ratio
    // a CPU-bound machine would give, which the load distorts far less than req/s.
    const chainRatios = Object.fromEntries(PATHS.map((k) => [k, []]));
    for (let round = 0; round < ROUNDS; round++) {
      // Rotating which goes first, so that a change of load within a round does not favour one path.
      const order = PATHS.map((_, i) => PATHS[(i + round) % PATHS.length]);
      const got = {};
      for (const path of order) {
        const { pid, headers } = paths[path];
        const pool = paths[path].pool(clients);
        const once = async () => {
          const r = await pool.request({ path: "/", method: "GET", headers });
          const b = await r.body.text();
          if (r.statusCode !== 200 || b.length !== 1024) throw new Error(`${path}: bad answer ${r.statusCode} ${b.slice(0, 100)}`);
          if (path === "scanned" && !r.headers["cf-ray"]) throw new Error("scanned: no cf-ray on the answer");
        };
        let cpu0 = 0;
        let wd0 = 0;
        let me0;
        const { n, secs } = await timedLoops(once, clients, SECONDS, () => {
          cpu0 = pid ? cpuOf(pid) : 0;
          wd0 = cpuOf(info.pid);
          me0 = process.cpuUsage();
        });
        const me = process.cpuUsage(me0);
        if (path === "scanned") scannedRequests += n;
        got[path] = { rps: n / secs, cpu: pid ? (cpuOf(pid) - cpu0) / n : 0, workerd: (cpuOf(info.pid) - wd0) / n, client: (me.user + me.system) / n };
        await pool.close();
      }
      const base = got.direct?.rps;
      const parts = PATHS.map((k) => {
        rates[k].push(got[k].rps);
        cpus[k].push(got[k].cpu);
        workerdCpus[k].push(got[k].workerd);
        if (base) ratios[k].push(got[k].rps / base);
        if (got.direct) chainRatios[k].push((got.direct.client + got.direct.workerd) / (got[k].client + got[k].workerd + got[k].cpu));
        const cpu = paths[k].pid ? `, ${got[k].cpu.toFixed(0)} µs CPU/req in front` : "";
        return `${k} ${got[k].rps.toFixed(0)} req/s${base ? ` (${(got[k].rps / base).toFixed(2)})` : ""}${cpu}, workerd ${got[k].workerd.toFixed(0)}, client ${got[k].client.toFixed(0)} µs/req`;
      });
      console.log(`c=${clients} round ${round + 1}: ${parts.join("; ")}; load ${load()}`);
    }
    const summary = PATHS.map((k) => {
      const cpu = paths[k].pid ? `, CPU ${median(cpus[k]).toFixed(0)} µs/req in front` : "";
      return `${k} ${median(rates[k]).toFixed(0)} req/s${ratios[k].length ? `, / direct ${median(ratios[k]).toFixed(2)} (rounds ${ratios[k].map((r) => r.toFixed(2)).join(" ")})` : ""}${cpu}, workerd ${median(workerdCpus[k]).toFixed(0)} µs/req${chainRatios[k].length ? `, chain CPU ratio ${median(chainRatios[k]).toFixed(2)}` : ""}`;
    });
    console.log(`c=${clients} medians: ${summary.join("; ")}`);
  }
  if (PATHS.includes("scanned")) {
    // Every answer the scanned pipe passed was framed and counted (the warm-up's too): a check on its framing.
    const counted = await scanned.counts();
    console.log(`scanned pipe counted ${counted.responses} answers (≥ ${scannedRequests} timed requests), refused ${counted.refused}`);
    if (counted.responses < scannedRequests || counted.refused !== 0) throw new Error("the scanned pipe's counts do not match the requests");
  }
} finally {
  for (const f of floors) f.stop();
  await p.dispose();
}
