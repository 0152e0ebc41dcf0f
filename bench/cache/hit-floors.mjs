// Issue 34's 1 KiB HIT against its floors: how close can any HIT served by Node's http server come to the goal's bare
// Node server, and where between them is the edge? wrk at 32 connections, in rotating order each round:
//   goal   bare Node answering a fixed 1 KiB body with two headers, started as bench/cache/cache.mjs starts it (no
//          Node flags): the goal's floor (≥ 0.8× its req/s);
//   bare   the same server with the bin's Node flags (what the flags alone change);
//   head   bare plus the edge's HIT head, header for header as the edge sent it (Age and cf-ray per answer);
//   least  head plus the least any HIT must do (hit-floor-server.mjs: the Host's zone, the key, the lookup, the
//          clock, Age, a ray, the answer counted per zone);
//   prebuilt  `head`'s bytes, the fixed fields as one string built once, past writeHead's per-field checks (measured
//          only when named in BENCH_PATHS);
//   platform  a copy of this build's platform whose edge listener answers the bench's host first, as `head` does
//          (hit-floor-preload.mjs), before any per-request code of ours: the platform's process itself, with nothing
//          of ours on the path (the copy lives in bench/results/ while the bench runs);
//   thread the platform unchanged, with a worker thread of its process serving `least` on a port of its own
//          (hit-floor-thread.mjs): a HIT in an isolate of its own beside the platform's main thread;
//   edge   the platform (a proxied A record, the object cached; checked to answer HIT).
// Prints each round (req/s and CPU a request from /proc/<pid>/stat) and the medians of the ratios to `goal`.
// Run as root (the origin, nginx, listens on port 80): node bench/cache/hit-floors.mjs [seconds] [connections]
// BENCH_PATHS (default all: goal,bare,head,least,platform,thread,edge; goal is always measured), BENCH_ROUNDS (default 5),
// BENCH_PORT_BASE (default 18290: the servers on n+1 and up), BENCH_ORIGIN (default 127.0.0.143),
// BENCH_EDGE_VARIANTS="<node flags>;<node flags>": more edges side by side, each the same build started with those
// Node flags after the bin's (e.g. "--single-threaded-gc;--max-semi-space-size=16"), named by their flags.
import { execFileSync, spawn } from "node:child_process";
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { once } from "node:events";
import { cpus, loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { binNodeFlags } from "../lib/bin-flags.mjs";
import { startHitOrigin } from "../lib/hit-origin.mjs";
import { startPlatform } from "../lib/platform.mjs";
import { loadText as load, median } from "../lib/stats.mjs";

const seconds = Number(process.argv[2] ?? 6);
const connections = Number(process.argv[3] ?? 32);
const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
const ORIGIN = process.env.BENCH_ORIGIN ?? "127.0.0.143";
const base = Number(process.env.BENCH_PORT_BASE ?? 18290);
const HOST = "www.bench-cache.example";
const cli = process.env.BENCH_CLI ?? fileURLToPath(new URL("../../dist/bin/edgecli.js", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "edge-hit-floors-"));
chmodSync(dir, 0o755);
const children = [];
// The patched copy of the build sits inside the repository, so its bundle finds node_modules as the build does.
const patchedDist = join(fileURLToPath(new URL("../results/", import.meta.url)), `hit-floor-dist-${process.pid}`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function cpuMicros(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

function measured(port, pid) {
  const before = cpuMicros(pid);
  const out = execFileSync(
    "wrk",
    [
      "-t2",
      `-c${connections}`,
      `-d${seconds}s`,
      ...(process.env.BENCH_WRK_LATENCY ? ["--latency"] : []),
      "-H",
      `Host: ${HOST}`,
      `http://127.0.0.1:${port}/1k.js`,
    ],
    {
      encoding: "utf8",
    },
  );
  const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? 0);
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
  if (non2xx > 0) throw new Error(`port ${port}: ${non2xx} answers not 2xx`);
  return { rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0), cpu: (cpuMicros(pid) - before) / Math.max(1, requests) };
}

const curlHead = (port) =>
  execFileSync("curl", ["-s", "-o", "/dev/null", "-D", "-", "-H", `Host: ${HOST}`, `http://127.0.0.1:${port}/1k.js`], { encoding: "utf8" });

async function startFloor(mode, port, nodeFlags, head) {
  const child = spawn(
    process.execPath,
    [...nodeFlags, fileURLToPath(new URL("./hit-floor-server.mjs", import.meta.url)), mode, String(port), JSON.stringify(head)],
    {
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  children.push(child);
  const [line] = await once(createInterface({ input: child.stdout }), "line");
  JSON.parse(line);
  return { pid: child.pid, port };
}

try {
  startHitOrigin(dir, ORIGIN, children);
  const variants = (process.env.BENCH_EDGE_VARIANTS ?? "").split(";").filter(Boolean);
  const edges = {};
  for (const [i, flags] of ["", ...variants].entries()) {
    const port = base + 5 + i;
    const edge = await startPlatform({ port, stateDir: join(dir, `state-${i}`), children, nodeArgs: flags.split(" ").filter(Boolean) });
    await edge.proxiedZone("bench-cache.example", ORIGIN);
    let status;
    for (let t = 0; t < 60 && status !== "HIT"; t++) {
      try {
        status = /cf-cache-status: (\w+)/i.exec(curlHead(port))?.[1];
      } catch {
        /* the origin is starting */
      }
      if (status !== "HIT") await sleep(500);
    }
    if (status !== "HIT") throw new Error(`the edge ${flags} answered ${status}, not HIT`);
    edges[flags === "" ? "edge" : `edge ${flags}`] = { pid: edge.pid, port };
  }
  const edgePort = base + 5;
  // The edge's HIT head, as writeHead's list: every header but those Node's server writes itself.
  const head = [];
  for (const line of curlHead(edgePort).split("\r\n").slice(1)) {
    const colon = line.indexOf(":");
    if (colon < 0) continue;
    const name = line.slice(0, colon).toLowerCase();
    if (!["date", "connection", "keep-alive"].includes(name)) head.push(name, line.slice(colon + 1).trim());
  }
  const flags = binNodeFlags(cli);
  // BENCH_PATHS=least,edge: only those are started and measured (the goal's floor always: every ratio is to it).
  const chosen = process.env.BENCH_PATHS?.split(",");
  const wanted = (name) => name === "goal" || (!chosen && name !== "prebuilt") || (chosen ?? []).some((c) => name === c || name.startsWith(`${c} `));
  const servers = {};
  const floors = [
    ["goal", "bare", []],
    ["bare", "bare", flags],
    ["head", "head", flags],
    ["least", "least", flags],
    ["prebuilt", "prebuilt", flags],
  ];
  for (const [i, [name, mode, nodeFlags]] of floors.entries())
    if (wanted(name)) servers[name] = await startFloor(mode, base + (i < 4 ? 1 + i : 20 + i), nodeFlags, head);
  if (wanted("platform")) {
    // This build copied, its edge listener patched to offer each request to the preloaded floor first.
    const distDir = dirname(dirname(cli));
    mkdirSync(dirname(patchedDist), { recursive: true });
    cpSync(distDir, patchedDist, { recursive: true });
    const bundlePath = join(patchedDist, "bin", "edgecli.bundle.js");
    const bundle = readFileSync(bundlePath, "utf8");
    const listenerStart = "const listener = (req, res) => {";
    if (bundle.split(listenerStart).length !== 2) throw new Error(`the bundle's edge listener (${listenerStart}) is not found once`);
    writeFileSync(bundlePath, bundle.replace(listenerStart, `${listenerStart} if (globalThis.__benchHitFloor?.(req, res)) return;`));
    rmSync(join(patchedDist, "bin", "edgecli.bundle.cache"), { force: true });
    const port = base + 6 + variants.length;
    const platform = await startPlatform({
      port,
      stateDir: join(dir, "state-platform"),
      children,
      cliPath: join(patchedDist, "bin", "edgecli.js"),
      nodeArgs: ["--import", fileURLToPath(new URL("./hit-floor-preload.mjs", import.meta.url))],
      env: { BENCH_HIT_FLOOR_HEAD: JSON.stringify(head), BENCH_HIT_FLOOR_HOST: HOST },
    });
    await platform.proxiedZone("bench-cache.example", ORIGIN);
    if (!/cf-cache-status: HIT/i.test(curlHead(port))) throw new Error("the patched platform does not answer the floor's HIT");
    servers.platform = { pid: platform.pid, port };
  }
  if (wanted("thread")) {
    // The platform unchanged, with the `least` floor served by a worker thread of its process on a port of its own.
    const port = base + 7 + variants.length;
    const threadPort = base + 8 + variants.length;
    const platform = await startPlatform({
      port,
      stateDir: join(dir, "state-thread"),
      children,
      nodeArgs: ["--import", fileURLToPath(new URL("./hit-floor-thread.mjs", import.meta.url))],
      env: { BENCH_HIT_FLOOR_HEAD: JSON.stringify(head), BENCH_HIT_FLOOR_THREAD_PORT: String(threadPort) },
    });
    for (let t = 0; t < 40; t++) {
      try {
        curlHead(threadPort);
        break;
      } catch {
        await sleep(250);
      }
    }
    servers.thread = { pid: platform.pid, port: threadPort };
  }
  for (const [name, edge] of Object.entries(edges)) if (wanted(name)) servers[name] = edge;
  const names = Object.keys(servers);
  console.log(
    `# ${new Date().toISOString()} ${cpus().length} × ${cpus()[0].model}, Node ${process.version}, load ${load()}; wrk -t2 -c${connections} -d${seconds}s, ${rounds} rounds in rotating order; the bin's flags: ${flags.join(" ")}`,
  );
  console.log(`# the edge's HIT head (${head.length / 2} headers besides Date, Connection, Keep-Alive): ${head.filter((_, i) => i % 2 === 0).join(", ")}`);
  for (const name of names) measured(servers[name].port, servers[name].pid); // warm-up
  const results = Object.fromEntries(names.map((n) => [n, []]));
  for (let r = 0; r < rounds; r++) {
    const order = names.map((_, i) => names[(i + r) % names.length]);
    const round = {};
    for (const name of order) round[name] = measured(servers[name].port, servers[name].pid);
    for (const name of names) results[name].push(round[name]);
    console.log(
      `round ${r + 1} (load ${loadavg()[0].toFixed(1)}, ${order[0]} first): ${names
        .map((n) => `${n} ${round[n].rps.toFixed(0)} req/s ${round[n].cpu.toFixed(1)} µs (${(round[n].rps / round.goal.rps).toFixed(2)})`)
        .join(", ")}`,
    );
  }
  console.log("medians of the rounds: / goal by req/s, goal's CPU a request / this one's, CPU a request");
  const width = Math.max(...names.map((n) => n.length));
  for (const name of names) {
    const byRate = median(results[name].map((x, i) => x.rps / results.goal[i].rps));
    const byCpu = median(results[name].map((x, i) => results.goal[i].cpu / x.cpu));
    console.log(`  ${name.padEnd(width)} ${byRate.toFixed(2)}  ${byCpu.toFixed(2)}  ${median(results[name].map((x) => x.cpu)).toFixed(1)} µs`);
  }
} finally {
  for (const c of children) c.kill("SIGTERM");
  await sleep(500);
  rmSync(dir, { recursive: true, force: true });
  rmSync(patchedDist, { recursive: true, force: true });
}
