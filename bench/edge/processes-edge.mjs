// One edge process per CPU, measured on the edge itself (issue 33): the platform as one process and with
// EDGE_PROCESSES=<n> (the prototype of src/edge/processes/ on branch p21-processes, not in main: more processes accepting on the edge port's listening
// socket, each serving the tenant path itself), side by side in one run with the floors of the goals:
// - the 1 KiB proxied GET (as bench/edge/proxy.mjs): vs the undici pass-through (one process, and as n processes
//   sharing the socket, bench/edge/processes.mjs's cluster SCHED_NONE);
// - the 1 KiB cache HIT (as bench/cache/cache.mjs): vs a bare Node server answering a fixed body (one process, and
//   n processes).
// Each run's CPU per request (the server's process tree: user + system from /proc over its wrk run, per request wrk
// counted) beside req/s and p50; rounds alternate their order. RSS of all the platform's processes together (the
// primary, its children: workerd, the edge processes) at idle after start and after the runs.
// Run as root (the origin listens on 127.0.0.147:80):
//   node bench/edge/processes-edge.mjs [seconds] [connections]    (BENCH_ROUNDS, default 3; BENCH_PROCESSES, default CPUs)
// Against a build without src/edge/processes/ (main's) the "edge ×n" platform is one process: the bench says so.
import { execFileSync, spawn } from "node:child_process";
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { treeCpuSeconds } from "../dns/proc-stats.mjs";
import { freePort, serveArgs, startPlatform } from "../lib/platform.mjs";

const seconds = Number(process.argv[2] ?? 8);
const connections = Number(process.argv[3] ?? 32);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const processes = Number(process.env.BENCH_PROCESSES ?? cpus().length);
const ORIGIN = "127.0.0.147";
const HOST = "www.bench-processes.example";
const cli = process.env.BENCH_CLI ?? fileURLToPath(new URL("../../dist/bin/edgecli.js", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "edge-processes-edge-bench-"));
chmodSync(dir, 0o755);
const children = [];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// /1k: no extension, not cached (DYNAMIC: proxying); /1k.js: cached (origin says max-age=3600), HITs once warm.
writeFileSync(join(dir, "1k"), Buffer.alloc(1024, 97));
writeFileSync(join(dir, "1k.js"), Buffer.alloc(1024, 97));
// 1 GiB without an extension (not cached: streamed through), for the RSS during a large transfer.
execFileSync("truncate", ["-s", "1G", join(dir, "big")]);
writeFileSync(
  join(dir, "nginx.conf"),
  `worker_processes 1; pid ${dir}/nginx.pid; error_log ${dir}/nginx-error.log; daemon off;
events { worker_connections 4096; }
http { access_log off; server { listen ${ORIGIN}:80; root ${dir}; location / { add_header Cache-Control "max-age=3600"; } } }`,
);

function start(cmd, args, env = {}) {
  const c = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env } });
  children.push(c);
  c.stderr.on("data", (d) => process.env.BENCH_DEBUG && process.stderr.write(`[${args.at(-1)}] ${d}`));
  return c;
}

/** The pids of a process and its live descendants. */
function tree(pid) {
  const out = [];
  const visit = (p) => {
    out.push(Number(p));
    try {
      for (const t of readdirSync(`/proc/${p}/task`))
        for (const c of readFileSync(`/proc/${p}/task/${t}/children`, "utf8").split(" ").filter(Boolean)) visit(c);
    } catch {
      /* exited meanwhile */
    }
  };
  visit(pid);
  return out;
}

/** RSS of a process and its descendants together, MiB (VmRSS: pages shared between them counted in each). */
function treeRssMiB(pid) {
  let kib = 0;
  for (const p of tree(pid)) {
    try {
      kib += Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${p}/status`, "utf8"))?.[1] ?? 0);
    } catch {
      /* exited meanwhile */
    }
  }
  return kib / 1024;
}

/** Proportional RSS (Pss: a shared page split between the processes sharing it) of the tree, MiB: what they cost together. */
function treePssMiB(pid) {
  let kib = 0;
  for (const p of tree(pid)) {
    try {
      kib += Number(/^Pss:\s+(\d+)/m.exec(readFileSync(`/proc/${p}/smaps_rollup`, "utf8"))?.[1] ?? 0);
    } catch {
      /* exited meanwhile */
    }
  }
  return kib / 1024;
}

function wrk(url, pid, host, duration = seconds) {
  const args = ["-t2", `-c${connections}`, `-d${duration}s`, "--latency", url];
  if (host) args.push("-H", `Host: ${host}`);
  const cpuBefore = treeCpuSeconds(pid);
  const out = execFileSync("wrk", args, { encoding: "utf8" });
  const cpu = treeCpuSeconds(pid) - cpuBefore;
  if (process.env.BENCH_DEBUG) console.error(out);
  const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? 0);
  const p50 = /50%\s+([\d.]+)(\w+)/.exec(out);
  const p50ms = p50 ? Number(p50[1]) * (p50[2] === "us" ? 0.001 : p50[2] === "ms" ? 1 : 1000) : NaN;
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0),
    p50ms,
    cpuUs: requests ? (cpu * 1e6) / requests : 0,
    non2xx: Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0),
    socketErrors: /Socket errors: (.*)/.exec(out)?.[1],
  };
}

const curl = (port, path, host) =>
  execFileSync("curl", ["-s", "-o", "/dev/null", "-D", "-", ...(host ? ["-H", `Host: ${host}`] : []), `http://127.0.0.1:${port}${path}`], {
    encoding: "utf8",
  });

/** Starts the platform again on a state directory made before (no banner credentials then): waits for its banner. */
async function restartPlatform(port, stateDir, env) {
  const edge = start(process.execPath, serveArgs({ cliPath: cli, port, stateDir }), env);
  let banner = "";
  edge.stderr.on("data", (d) => (banner += d));
  for (let i = 0; i < 900 && !/Edge Platform is running/.test(banner) && edge.exitCode === null; i++) await sleep(200);
  if (!/Edge Platform is running/.test(banner)) throw new Error(`the platform did not start again: ${banner}`);
  return edge;
}

try {
  const nginx = start("nginx", ["-c", join(dir, "nginx.conf")]);
  const [proxy1, proxyN, bare1, bareN, edge1Port, edgeNPort] = await Promise.all([freePort(), freePort(), freePort(), freePort(), freePort(), freePort()]);
  const floors = fileURLToPath(new URL("./cluster-floors.cjs", import.meta.url));
  const servers = {
    undici1: start(process.execPath, [floors, "proxy", String(proxy1), "1", ORIGIN]),
    undiciN: start(process.execPath, [floors, "proxy", String(proxyN), String(processes), ORIGIN]),
    bare1: start(process.execPath, [floors, "bare", String(bare1), "1"]),
    bareN: start(process.execPath, [floors, "bare", String(bareN), String(processes)]),
  };
  // One process: as the platform starts today.
  const edge1 = await startPlatform({ port: edge1Port, stateDir: join(dir, "state-1"), children });
  await edge1.proxiedZone("bench-processes.example", ORIGIN);
  // n processes: the zone is made first (the prototype's edge processes read their state once, at start), then the
  // platform starts again on the same state with EDGE_PROCESSES.
  const stateN = join(dir, "state-n");
  const made = await startPlatform({ port: edgeNPort, stateDir: stateN, children });
  await made.proxiedZone("bench-processes.example", ORIGIN);
  made.process.kill("SIGTERM");
  await new Promise((r) => (made.process.exitCode !== null ? r() : made.process.once("exit", r)));
  const idle1 = { rss: treeRssMiB(edge1.pid), pss: treePssMiB(edge1.pid), processes: tree(edge1.pid).length };
  const edgeN = await restartPlatform(edgeNPort, stateN, { EDGE_PROCESSES: String(processes) });
  await sleep(2000);
  const idleN = { rss: treeRssMiB(edgeN.pid), pss: treePssMiB(edgeN.pid), processes: tree(edgeN.pid).length };

  // Every server answers; the edges' /1k is proxied (DYNAMIC) and their /1k.js a HIT in every process (each has its
  // own cache: a few requests on new connections reach each of them).
  for (let i = 0; i < 40; i++) {
    try {
      for (const port of [proxy1, proxyN, bare1, bareN]) curl(port, "/1k");
      break;
    } catch {
      await sleep(250);
    }
  }
  for (const [name, port] of [
    ["edge ×1", edge1Port],
    [`edge ×${processes}`, edgeNPort],
  ]) {
    const dynamic = /cf-cache-status: (\w+)/i.exec(curl(port, "/1k", HOST))?.[1];
    if (dynamic !== "DYNAMIC") throw new Error(`${name}'s /1k is ${dynamic}, not DYNAMIC`);
    for (let i = 0; i < 20; i++) curl(port, "/1k.js", HOST);
    for (let i = 0; i < 6; i++) {
      const hit = /cf-cache-status: (\w+)/i.exec(curl(port, "/1k.js", HOST))?.[1];
      if (hit !== "HIT") throw new Error(`${name}'s /1k.js is ${hit}, not HIT`);
    }
  }
  const edgeProcessesSeen = tree(edgeN.pid).length - tree(edge1.pid).length;
  // A build without src/edge/processes/ (main's) starts one process whatever EDGE_PROCESSES says: then "edge ×n" is
  // one process too, and the bench says so (its numbers are a second one-process edge's).
  if (edgeProcessesSeen < processes - 1)
    console.log(
      `# EDGE_PROCESSES=${processes} started ${edgeProcessesSeen + 1} process(es): this build has no edge processes; "edge ×${processes}" below is ONE process`,
    );

  const runs = {
    proxy: {
      "edge ×1": [`http://127.0.0.1:${edge1Port}/1k`, edge1.pid, HOST],
      [`edge ×${processes}`]: [`http://127.0.0.1:${edgeNPort}/1k`, edgeN.pid, HOST],
      "undici ×1": [`http://127.0.0.1:${proxy1}/1k`, servers.undici1.pid],
      [`undici ×${processes}`]: [`http://127.0.0.1:${proxyN}/1k`, servers.undiciN.pid],
    },
    hit: {
      "edge ×1": [`http://127.0.0.1:${edge1Port}/1k.js`, edge1.pid, HOST],
      [`edge ×${processes}`]: [`http://127.0.0.1:${edgeNPort}/1k.js`, edgeN.pid, HOST],
      "bare node ×1": [`http://127.0.0.1:${bare1}/1k.js`, servers.bare1.pid],
      [`bare node ×${processes}`]: [`http://127.0.0.1:${bareN}/1k.js`, servers.bareN.pid],
    },
  };
  // Warm-up of each (not counted): a Node server's first seconds run unoptimised code.
  for (const part of Object.values(runs)) for (const [url, pid, host] of Object.values(part)) wrk(url, pid, host, 2);
  console.log(
    `# ${new Date().toISOString()} ${cpus().length} × ${cpus()[0].model}, Node ${process.version}, load ${loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")}; wrk -t2 -c${connections} -d${seconds}s, ${rounds} round(s), the order reversed every other round`,
  );
  const all = { proxy: [], hit: [] };
  for (let r = 0; r < rounds; r++) {
    for (const [part, servers] of Object.entries(runs)) {
      const entries = r % 2 === 0 ? Object.entries(servers) : Object.entries(servers).reverse();
      const x = {};
      for (const [name, [url, pid, host]] of entries) x[name] = wrk(url, pid, host);
      all[part].push(x);
      console.log(
        `round ${r + 1} ${part} (load ${loadavg()[0].toFixed(1)}): ${Object.entries(x)
          .map(
            ([k, v]) => `${k} ${v.rps.toFixed(0)} req/s (p50 ${v.p50ms.toFixed(2)} ms, ${v.cpuUs.toFixed(0)} µs CPU${v.non2xx ? `, ${v.non2xx} non-2xx` : ""})`,
          )
          .join("; ")}`,
      );
    }
  }
  // How the work split between the n-process platform's processes (CPU seconds since start, each process alone).
  const own = (p) => {
    try {
      const f = readFileSync(`/proc/${p}/stat`, "utf8").split(") ")[1].split(" ");
      return (Number(f[11]) + Number(f[12])) / 100;
    } catch {
      return 0;
    }
  };
  console.log(
    `CPU seconds of edge ×${processes}'s processes since start: ${tree(edgeN.pid)
      .map((p, i) => `${i === 0 ? "primary" : `child ${p}`} ${own(p).toFixed(1)}`)
      .join(", ")}`,
  );
  // One 1 GiB download through each edge (curl, one connection: it lands on one of the processes), the RSS and Pss
  // of all the platform's processes together sampled every 100 ms.
  const big = {};
  for (const [name, port, pid] of [
    ["edge ×1", edge1Port, edge1.pid],
    [`edge ×${processes}`, edgeNPort, edgeN.pid],
  ]) {
    let peakRss = 0;
    let peakPss = 0;
    const sampler = setInterval(() => {
      peakRss = Math.max(peakRss, treeRssMiB(pid));
      peakPss = Math.max(peakPss, treePssMiB(pid));
    }, 100);
    const started = performance.now();
    const curlBig = spawn("curl", ["-s", "-o", "/dev/null", "-w", "%{http_code} %{size_download}", "-H", `Host: ${HOST}`, `http://127.0.0.1:${port}/big`]);
    let said = "";
    curlBig.stdout.on("data", (d) => (said += d));
    await new Promise((r) => curlBig.once("exit", r));
    clearInterval(sampler);
    if (!said.startsWith("200 1073741824")) throw new Error(`${name}'s 1 GiB download: ${said}`);
    big[name] = { peakRss, peakPss, mibs: 1024 / ((performance.now() - started) / 1000) };
  }
  console.log(
    `1 GiB download, peak RSS (Pss) of the platform's processes together: ${Object.entries(big)
      .map(([k, v]) => `${k} ${v.peakRss.toFixed(0)} (${v.peakPss.toFixed(0)}) MiB at ${v.mibs.toFixed(0)} MiB/s`)
      .join(", ")}`,
  );
  const idleAfter = { one: treeRssMiB(edge1.pid), many: treeRssMiB(edgeN.pid), onePss: treePssMiB(edge1.pid), manyPss: treePssMiB(edgeN.pid) };
  console.log("\n## medians of the rounds");
  for (const [part, xs] of Object.entries(all)) {
    const floor = part === "proxy" ? "undici" : "bare node";
    for (const name of Object.keys(xs[0])) {
      const m = (f) => median(xs.map((x) => f(x[name])));
      console.log(
        `${part.padEnd(5)} ${name.padEnd(14)} ${m((v) => v.rps)
          .toFixed(0)
          .padStart(6)} req/s  p50 ${m((v) => v.p50ms).toFixed(2)} ms  CPU ${m((v) => v.cpuUs)
          .toFixed(0)
          .padStart(3)} µs/request`,
      );
    }
    const ratio = (a, b, f = (v) => v.rps) => median(xs.map((x) => f(x[a]) / f(x[b]))).toFixed(2);
    const added = (a, b) => (median(xs.map((x) => x[a].p50ms - x[b].p50ms)) * 1000).toFixed(0);
    const N = `×${processes}`;
    console.log(
      `${part}: edge ×1 / ${floor} ×1 ${ratio("edge ×1", `${floor} ×1`)}; edge ${N} / ${floor} ×1 ${ratio(`edge ${N}`, `${floor} ×1`)}; edge ${N} / ${floor} ${N} ${ratio(`edge ${N}`, `${floor} ${N}`)}; edge ${N} / edge ×1 ${ratio(`edge ${N}`, "edge ×1")}; ${floor} ${N} / ${floor} ×1 ${ratio(`${floor} ${N}`, `${floor} ×1`)}`,
    );
    console.log(
      `${part}: CPU per request, edge ×1 / ${floor} ×1 ${ratio("edge ×1", `${floor} ×1`, (v) => v.cpuUs)}, edge ${N} / edge ×1 ${ratio(`edge ${N}`, "edge ×1", (v) => v.cpuUs)}; added p50 vs ${floor} ×1: edge ×1 ${added("edge ×1", `${floor} ×1`)} µs, edge ${N} ${added(`edge ${N}`, `${floor} ×1`)} µs`,
    );
  }
  console.log(
    `RSS of the platform's processes together (MiB; Pss, shared pages split, in brackets): idle after start: 1 process ${idle1.rss.toFixed(0)} (${idle1.pss.toFixed(0)}) in ${idle1.processes} processes, ${processes} edge processes ${idleN.rss.toFixed(0)} (${idleN.pss.toFixed(0)}) in ${idleN.processes}; after the runs: ${idleAfter.one.toFixed(0)} (${idleAfter.onePss.toFixed(0)}) and ${idleAfter.many.toFixed(0)} (${idleAfter.manyPss.toFixed(0)})`,
  );
} finally {
  for (const c of children) c.kill("SIGTERM");
  await sleep(1000);
  rmSync(dir, { recursive: true, force: true });
}
