// AI gateway overhead, in one run, against one local upstream (see the AI gateway section of docs/benchmarks.md):
//   direct to the upstream; the floor, a bare `node:http` pass-through (bare-proxy.mjs: keep-alive http.Agent,
//   bodies piped both ways, nothing else); our gateway (authentication and logging on); Portkey 1.15.2.
// Reports latency p50/p99 at concurrency 1 (own client, µs resolution) and what the gateway adds over the floor;
// req/s at 1, 8 and 32 clients (wrk, or autocannon: LOADGEN below) with the ratios to the floor and, at 32, to Portkey; and time to first
// byte for streaming (ours only; Portkey's streaming fails on Node 20). CPU per request is given for the whole
// process, its main thread, and each other thread (busiest first: the log writer thread, then the WAL
// checkpointer's and V8's helpers), per round.
// The machine is shared, so everything is interleaved: at c=1 the targets take turns in segments of SEGMENT
// requests; for req/s each round runs every target once at each client count, in a rotating order, and the
// median of ROUNDS rounds is reported. The load average is recorded at the start and after each phase.
// Usage: npm run build && cd bench/gateway && npm ci && flock /tmp/bench.lock node bench.mjs  (wrk: apt-get install wrk)
// Environment: N (c=1 requests per target, default 3000), SEGMENT (20), WARMUP (sequential requests per target
// before the c=1 rounds, 500), WARMUP_S (seconds of c=8 load per target first, 4), CLIENTS (client counts for
// req/s, "1,8,32"), ROUNDS (req/s rounds, 3), DURATION (seconds per target per round, 5), PORTKEY=0 (skip it),
// QUICK=1 (c=1 latency and req/s at 32 clients of ours only, for iterating on the gateway),
// BASELINE=<checkout> (a second platform built in that checkout, e.g. a worktree of main after `npm run build`,
// joins every rotation as "gateway_before": before/after of a change measured in the same run; a copy of dist/ and
// package.json beside a node_modules symlink to this repository's also works, outside bench/gateway, whose own
// node_modules hold Portkey's older zod),
// GATEWAY_NODE_OPTIONS (e.g. --cpu-prof --cpu-prof-dir=/tmp/prof, for the platform under test; the log writer
// thread writes a profile of its own), BASELINE may also be a copy of a dist/ changed by hand (no git needed),
// GATEWAY_LOGS=0 / GATEWAY_AUTH=0 (the gateway without logging / authentication, to see what each costs),
// COMPARE_LOGS=1 (a gateway without logs takes turns with the one with logs, in the same run),
// LOADGEN=wrk|autocannon (the req/s rows' load generator, the same for every target; default wrk when installed:
// autocannon runs inside this process and takes CPU from the targets on a small machine; its own CPU per request
// is reported either way), WRK_THREADS (1).
import { spawn, execSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import { Agent, request } from "undici";
import { benchGateway, startPlatform } from "./platform.mjs";

const here = fileURLToPath(new URL(".", import.meta.url));
const root = fileURLToPath(new URL("../../", import.meta.url));
/** QUICK=1: latency at c=1 and req/s at 32 clients of direct, bare and gateway only; no Portkey, no streaming. */
const QUICK = process.env.QUICK === "1";
const N_LATENCY = Number(process.env.N ?? (QUICK ? 2000 : 3000));
/** Requests per target in a row at c=1; the targets take turns, so drift of a shared machine hits all alike. */
const SEGMENT = Number(process.env.SEGMENT ?? 20);
const WARMUP = Number(process.env.WARMUP ?? 500);
const WARMUP_S = Number(process.env.WARMUP_S ?? 4);
const CLIENTS = (process.env.CLIENTS ?? (QUICK ? "32" : "1,8,32")).split(",").map(Number);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const DURATION = Number(process.env.DURATION ?? 5);
const WITH_PORTKEY = !QUICK && process.env.PORTKEY !== "0";
const BASELINE = process.env.BASELINE;
const children = [];
process.on("exit", () => children.forEach((c) => c.kill()));
const load = () => loadavg().map((x) => +x.toFixed(1));

function spawnChild(cmd, args, opts = {}) {
  const c = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"], ...opts });
  children.push(c);
  return c;
}
const firstLine = (child, match) =>
  new Promise((resolve, reject) => {
    let buf = "";
    const on = (d) => {
      buf += d;
      const m = match(buf);
      if (m) {
        child.stdout.off("data", on);
        child.stderr.off("data", on);
        resolve(m);
      }
    };
    child.stdout.on("data", on);
    child.stderr.on("data", on);
    child.on("exit", (code) => reject(new Error(`exited ${code}: ${buf}`)));
  });

// 1. The upstream.
const mock = spawnChild(process.execPath, [`${here}mock-upstream.mjs`]);
const mockPort = Number(await firstLine(mock, (b) => /^(\d+)\n/.exec(b)?.[1]));
const upstream = `http://127.0.0.1:${mockPort}/v1`;

// The floor: a bare node:http pass-through.
const bare = spawnChild(process.execPath, [`${here}bare-proxy.mjs`, upstream]);
const barePort = Number(await firstLine(bare, (b) => /^(\d+)\n/.exec(b)?.[1]));

// 2. Our platform (and with BASELINE, the same from another checkout), with a gateway that has authentication and
// logging on.
// COMPARE_LOGS=1: a second gateway, the same but without logs, takes turns with the first (what logging costs).
const COMPARE_LOGS = process.env.COMPARE_LOGS === "1";
const gatewaysMade = COMPARE_LOGS ? [benchGateway, { ...benchGateway, id: "bench-nologs", collect_logs: false }] : [benchGateway];
// GATEWAY_NODE_OPTIONS (e.g. --cpu-prof --cpu-prof-dir=/tmp/prof) goes to the platform under test only.
const nodeArgs = process.env.GATEWAY_NODE_OPTIONS?.split(" ").filter(Boolean);
const { p, runToken } = await startPlatform(root, upstream, { nodeArgs, gateways: gatewaysMade });
const before = BASELINE ? await startPlatform(BASELINE, upstream, { gateways: gatewaysMade }) : undefined;

// 3. Portkey.
const portkeyPort = 18000 + Math.floor(Math.random() * 1000);
let portkey;
if (WITH_PORTKEY) {
  portkey = spawnChild(process.execPath, [`${here}node_modules/@portkey-ai/gateway/build/start-server.js`, "--headless", `--port=${portkeyPort}`]);
  await firstLine(portkey, (b) => /listening|running|started|8787|\d{4}/i.test(b) && b);
  await new Promise((r) => setTimeout(r, 500));
}

const body = JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "Say hello" }] });
const streamBody = JSON.stringify({
  model: "gpt-4o-mini",
  stream: true,
  stream_options: { include_usage: true },
  messages: [{ role: "user", content: "Say hello" }],
});
const base = { "content-type": "application/json", authorization: "Bearer sk-bench" };
const gatewayTarget = ({ p, runToken }) => ({
  url: `${p.url}/v1/${p.accountId}/bench/openai/chat/completions`,
  headers: { ...base, "gw-aig-authorization": `Bearer ${runToken}` },
  pid: p.process.pid,
});
const targets = {
  // pid: whose CPU is counted (for direct, the upstream's own; for the others, the proxy's alone).
  direct: { url: `${upstream}/chat/completions`, headers: base, pid: mock.pid },
  bare_passthrough: { url: `http://127.0.0.1:${barePort}/`, headers: base, pid: bare.pid },
  gateway: gatewayTarget({ p, runToken }),
};
if (before) targets.gateway_before = gatewayTarget(before);
if (COMPARE_LOGS) targets.gateway_no_logs = { ...targets.gateway, url: targets.gateway.url.replace("/bench/", "/bench-nologs/") };
if (portkey)
  targets.portkey = {
    url: `http://127.0.0.1:${portkeyPort}/v1/chat/completions`,
    headers: { ...base, "x-portkey-provider": "openai", "x-portkey-custom-host": upstream },
    pid: portkey.pid,
  };

// Sanity: each target answers 200 with the upstream's body.
for (const [name, t] of Object.entries(targets)) {
  const r = await request(t.url, { method: "POST", headers: t.headers, body });
  const text = await r.body.text();
  if (r.statusCode !== 200 || !text.includes("bench upstream")) throw new Error(`${name}: ${r.statusCode} ${text.slice(0, 200)}`);
}

const pct = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : Math.round((s[s.length / 2 - 1] + s[s.length / 2]) / 2);
};
/**
 * Closed loop at concurrency 1: one request at a time, each target over its own keep-alive connection of the
 * same client. Per-request time in µs, to the end of the body or (firstByte) to its first chunk.
 */
function latencyRunner(t, reqBody, firstByte) {
  const agent = new Agent({ connections: 1, keepAliveTimeout: 120_000 });
  return {
    async run(n, into) {
      for (let i = 0; i < n; i++) {
        const t0 = process.hrtime.bigint();
        const r = await request(t.url, { method: "POST", headers: t.headers, body: reqBody, dispatcher: agent });
        let tFirst;
        for await (const _c of r.body) tFirst ??= process.hrtime.bigint();
        const tEnd = process.hrtime.bigint();
        into?.push(Number(((firstByte ? tFirst : tEnd) - t0) / 1000n));
      }
    },
    close: () => agent.close(),
  };
}

/**
 * Interleaved rounds: every round runs each target for SEGMENT requests, in a rotating order, so that drift of
 * the machine (neighbours' load, CPU frequency) hits all targets alike: segments of a few hundred requests still
 * gave differences of 100 µs between identical targets on a loaded machine; segments of 20 agree within ~20 µs.
 * Returns p50/p90/p99/mean per target over all samples, and the CPU its serving process spent per request.
 */
async function interleaved(names, n, reqBody = body, firstByte = false) {
  const runners = Object.fromEntries(names.map((k) => [k, latencyRunner(targets[k], reqBody, firstByte)]));
  for (const k of names) await runners[k].run(WARMUP);
  const all = Object.fromEntries(names.map((k) => [k, []]));
  const cpu = Object.fromEntries(names.map((k) => [k, 0]));
  const per = SEGMENT;
  for (let round = 0; round < Math.ceil(n / SEGMENT); round++) {
    const order = names.map((_, i) => names[(i + round) % names.length]);
    const got = {};
    for (const k of order) {
      const cpu0 = cpuUs(targets[k].pid);
      await runners[k].run(per, (got[k] = []));
      cpu[k] += cpuUs(targets[k].pid) - cpu0;
    }
    for (const k of names) all[k].push(...got[k]);
  }
  await Promise.all(names.map((k) => runners[k].close()));
  const out = {};
  for (const k of names) {
    const s = all[k].sort((a, b) => a - b);
    out[k] = {
      n: s.length,
      p50: pct(s, 0.5),
      p90: pct(s, 0.9),
      p99: pct(s, 0.99),
      mean: Math.round(s.reduce((a, b) => a + b, 0) / s.length),
      cpu_us_per_req: Math.round(cpu[k] / s.length),
    };
  }
  return out;
}

/** user+system CPU time of a process (all its threads) in µs, from /proc (clock ticks of 10 ms). */
function cpuUs(pid) {
  return ticksUs(`/proc/${pid}/stat`);
}
/** The same for its main thread alone (the event loop; the rest is worker threads, GC helpers, libuv's pool). */
function mainThreadCpuUs(pid) {
  return ticksUs(`/proc/${pid}/task/${pid}/stat`);
}
/** CPU µs of each thread of a process, by thread id. */
function threadsCpuUs(pid) {
  const out = new Map();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      out.set(tid, ticksUs(`/proc/${pid}/task/${tid}/stat`));
    } catch {
      // The thread ended meanwhile.
    }
  }
  return out;
}
function ticksUs(file) {
  const f = readFileSync(file, "utf8").split(") ")[1].split(" ");
  return (Number(f[11]) + Number(f[12])) * 10_000;
}

/**
 * The load generator of the req/s rows (LOADGEN=wrk|autocannon; wrk when it is installed). autocannon runs in this
 * process, on the same two CPUs as the targets, and spends about half as much CPU per request as the bare Node
 * proxy it measures; wrk (C, one epoll thread) about a third of autocannon's, so the targets get more of the
 * machine. Either way the same generator drives every target, and its own CPU per request is reported
 * (`loadgen_cpu_us_per_req`). wrk's request timeout is set to autocannon's default (10 s): a request slower than
 * that counts as an error, not a request, with either.
 */
const hasWrk = (() => {
  try {
    execSync("wrk --version", { stdio: "ignore" });
    return true;
  } catch (e) {
    // wrk prints its usage and exits 1 on --version: installed; a missing command is ENOENT / 127.
    return e.status === 1;
  }
})();
const LOADGEN = process.env.LOADGEN ?? (hasWrk ? "wrk" : "autocannon");
if (LOADGEN !== "wrk" && LOADGEN !== "autocannon") throw new Error(`LOADGEN: wrk or autocannon, not ${LOADGEN}`);
if (LOADGEN === "wrk" && !hasWrk) throw new Error("LOADGEN=wrk, but wrk is not installed (Debian: apt-get install wrk)");
/** wrk's threads (WRK_THREADS, default 1: one epoll loop does far more than any target here answers). */
const WRK_THREADS = Number(process.env.WRK_THREADS ?? 1);
const wrkDir = mkdtempSync(`${tmpdir()}/bench-gateway-wrk-`);
process.on("exit", () => rmSync(wrkDir, { recursive: true, force: true }));
/** A wrk script that sends the bench's POST (body and headers in long brackets: no escaping to get wrong). */
function wrkScript(t) {
  const file = `${wrkDir}/${Object.keys(targets).find((k) => targets[k] === t)}.lua`;
  const lua = (s) => `[==[${s}]==]`;
  const lines = ['wrk.method = "POST"', `wrk.body = ${lua(body)}`];
  // "[ [", not "[[", which would open a long string.
  for (const [k, v] of Object.entries(t.headers)) lines.push(`wrk.headers[ ${lua(k)} ] = ${lua(v)}`);
  writeFileSync(file, lines.join("\n") + "\n");
  return file;
}
/** A wrk latency figure ("612.00us", "1.23ms", "2.00s") in ms. */
const wrkMs = (v) => {
  const m = /^([\d.]+)(us|ms|s)$/.exec(v);
  if (!m) throw new Error(`wrk latency: ${v}`);
  return +(Number(m[1]) * { us: 1e-3, ms: 1, s: 1e3 }[m[2]]).toFixed(3);
};

/** Runs wrk in a shell that prints, once wrk has ended, its own /proc stat: cutime and cstime are wrk's CPU. */
function runWrk(t, connections, duration) {
  const script = wrkScript(t);
  const args = [
    "-t",
    String(Math.min(WRK_THREADS, connections)),
    "-c",
    String(connections),
    "-d",
    `${duration}s`,
    "--latency",
    "--timeout",
    "10s",
    "-s",
    script,
    t.url,
  ];
  return new Promise((resolve, reject) => {
    const sh = spawn("sh", ["-c", 'wrk "$@" && echo "@@STAT $(cat /proc/$$/stat)"', "sh", ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    sh.stdout.on("data", (d) => (out += d));
    sh.stderr.on("data", (d) => (out += d));
    sh.on("exit", (code) => {
      const total = /(\d+) requests in ([\d.]+)(\w+)/.exec(out);
      const stat = /@@STAT .*?\) (.*)/.exec(out);
      // A script that fails to load leaves wrk sending bare GETs, and it still exits 0.
      if (code !== 0 || !total || !stat || out.includes(`${script}:`)) return reject(new Error(`wrk exited ${code}: ${out}`));
      const f = stat[1].split(" ");
      const errs = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
      resolve({
        total: Number(total[1]),
        rps: Math.round(Number(/Requests\/sec:\s+([\d.]+)/.exec(out)[1])),
        non2xx: Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0),
        errors: errs ? errs.slice(1).reduce((a, x) => a + Number(x), 0) : 0,
        p50ms: wrkMs(/^\s+50%\s+(\S+)/m.exec(out)[1]),
        p99ms: wrkMs(/^\s+99%\s+(\S+)/m.exec(out)[1]),
        // cutime + cstime of the shell: its waited-for child, wrk (clock ticks of 10 ms).
        loadgenUs: (Number(f[13]) + Number(f[14])) * 10_000,
      });
    });
  });
}

function runAutocannon(t, connections, duration) {
  const cpu0 = process.cpuUsage();
  return new Promise((resolve, reject) => {
    autocannon({ url: t.url, method: "POST", headers: t.headers, body, connections, duration }, (err, res) => {
      if (err) return reject(err);
      const cpu = process.cpuUsage(cpu0);
      resolve({
        total: res.requests.total,
        rps: Math.round(res.requests.average),
        non2xx: res.non2xx,
        errors: res.errors,
        p50ms: res.latency.p50,
        p99ms: res.latency.p99,
        // This whole process's CPU meanwhile: autocannon, and nothing else of the bench runs then.
        loadgenUs: cpu.user + cpu.system,
      });
    });
  });
}

/**
 * req/s at the given concurrency, and the CPU the serving process spent per request: on a loaded machine
 * req/s swings with the neighbours, CPU per request much less.
 */
async function throughput(t, connections, duration = DURATION) {
  const before = cpuUs(t.pid);
  const mainBefore = mainThreadCpuUs(t.pid);
  const threadsBefore = threadsCpuUs(t.pid);
  const res = await (LOADGEN === "wrk" ? runWrk : runAutocannon)(t, connections, duration);
  const n = res.total;
  // The other threads' (the log writer, the WAL checkpointer, V8's GC and compiler helpers), busiest first.
  const other_threads_cpu_us_per_req = [...threadsCpuUs(t.pid)]
    .filter(([tid]) => tid !== String(t.pid))
    .map(([tid, us]) => Math.round((us - (threadsBefore.get(tid) ?? 0)) / n))
    .filter((us) => us > 0)
    .sort((a, b) => b - a);
  return {
    rps: res.rps,
    cpu_us_per_req: Math.round((cpuUs(t.pid) - before) / n),
    main_thread_cpu_us_per_req: Math.round((mainThreadCpuUs(t.pid) - mainBefore) / n),
    other_threads_cpu_us_per_req,
    loadgen_cpu_us_per_req: Math.round(res.loadgenUs / n),
    non2xx: res.non2xx,
    errors: res.errors,
    p50ms: res.p50ms,
    p99ms: res.p99ms,
  };
}

/**
 * req/s at each client count: ROUNDS rounds, each running every target for DURATION seconds in a rotating order,
 * so that the neighbours' load hits all targets alike; the median round is reported per target.
 */
async function throughputRounds(names, clients) {
  const runs = Object.fromEntries(names.map((k) => [k, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < names.length; i++) {
      const k = names[(i + round) % names.length];
      runs[k].push(await throughput(targets[k], clients));
    }
  }
  const out = {};
  for (const k of names) {
    const r = runs[k];
    out[k] = {
      rps: median(r.map((x) => x.rps)),
      rps_rounds: r.map((x) => x.rps),
      cpu_us_per_req: median(r.map((x) => x.cpu_us_per_req)),
      main_thread_cpu_us_per_req: median(r.map((x) => x.main_thread_cpu_us_per_req)),
      other_threads_cpu_us_per_req: r.map((x) => x.other_threads_cpu_us_per_req),
      loadgen_cpu_us_per_req: median(r.map((x) => x.loadgen_cpu_us_per_req)),
      p50ms: median(r.map((x) => x.p50ms)),
      p99ms: median(r.map((x) => x.p99ms)),
      non2xx: r.reduce((a, x) => a + x.non2xx, 0),
      errors: r.reduce((a, x) => a + x.errors, 0),
    };
  }
  return out;
}

/** The commit a checkout is at (none: a copy of a dist/ outside git, say one changed by hand to try something). */
function commitOf(dir) {
  try {
    return execSync("git rev-parse --short HEAD", { cwd: dir, stdio: ["ignore", "pipe", "ignore"] })
      .toString()
      .trim();
  } catch {
    return null;
  }
}

const results = {
  date: new Date().toISOString(),
  nproc: cpus().length,
  cpu: cpus()[0]?.model,
  loadavg: { start: load() },
  node: process.version,
  commit: execSync("git rev-parse --short HEAD", { cwd: root }).toString().trim(),
  ...(BASELINE ? { baseline: BASELINE, baseline_commit: commitOf(BASELINE) } : {}),
  loadgen:
    LOADGEN === "wrk"
      ? `wrk ${
          execSync("wrk --version || true", { stdio: ["ignore", "pipe", "ignore"] })
            .toString()
            .split(" ")[1]
        }, ${WRK_THREADS} thread(s)`
      : "autocannon (in the bench's process)",
  method: { n_latency: N_LATENCY, segment: SEGMENT, warmup: WARMUP, warmup_s: WARMUP_S, clients: CLIENTS, rounds: ROUNDS, duration_s: DURATION },
  latency_c1_us: {},
  rps: {},
  ttfb_stream_us: {},
};
const ours = ["direct", "bare_passthrough", "gateway", ...(before ? ["gateway_before"] : []), ...(COMPARE_LOGS ? ["gateway_no_logs"] : [])];
const gateways = ours.filter((k) => k.startsWith("gateway"));
// Warm-up under load first: the JIT of a large program (the platform) keeps compiling for thousands of requests,
// and its compiler threads' CPU would otherwise be counted against the first measurements.
for (const name of [...ours, ...(portkey ? ["portkey"] : [])]) await throughput(targets[name], 8, WARMUP_S).catch(() => undefined);

// Latency at c=1: ours take turns; Portkey is measured against direct in a phase of its own, so that its heavy
// segments (1.4-1.9 ms of CPU per request) do not run between ours and move their figures.
const lat = (results.latency_c1_us = await interleaved(ours, N_LATENCY));
results.loadavg.after_latency = load();
console.error("latency c=1 (µs)", JSON.stringify(lat));
const summary = (results.summary = { latency_c1_us: {}, rps: {} });
for (const k of ours.filter((k) => k !== "direct")) {
  summary.latency_c1_us[k] = { added_p50: lat[k].p50 - lat.direct.p50, added_p99: lat[k].p99 - lat.direct.p99 };
}
// What the gateway adds beyond what forwarding itself costs in Node: its latency minus the floor's, same run.
for (const k of gateways) {
  Object.assign(summary.latency_c1_us[k], { over_floor_p50: lat[k].p50 - lat.bare_passthrough.p50, over_floor_p99: lat[k].p99 - lat.bare_passthrough.p99 });
}

for (const c of CLIENTS) {
  // Portkey takes turns with ours at 32 clients, for the 10x comparison under the same conditions.
  const names = c === 32 && portkey ? [...ours, "portkey"] : ours;
  const r = (results.rps[`c${c}`] = await throughputRounds(names, c));
  results.loadavg[`after_rps_c${c}`] = load();
  console.error(`req/s c=${c}`, JSON.stringify(Object.fromEntries(names.map((k) => [k, r[k].rps]))));
  console.error(
    `CPU µs per request (main thread) c=${c}`,
    JSON.stringify(Object.fromEntries(names.map((k) => [k, `${r[k].cpu_us_per_req} (${r[k].main_thread_cpu_us_per_req})`]))),
  );
  console.error(
    `CPU µs per request of the load generator (${LOADGEN}) c=${c}`,
    JSON.stringify(Object.fromEntries(names.map((k) => [k, r[k].loadgen_cpu_us_per_req]))),
  );
  console.error(
    `CPU µs per request of the other threads, busiest first, by round c=${c}`,
    JSON.stringify(Object.fromEntries(gateways.map((k) => [k, r[k].other_threads_cpu_us_per_req]))),
  );
  summary.rps[`c${c}`] = Object.fromEntries(names.map((k) => [k, r[k].rps]));
  // Ratios of the medians, and the median of each round's own ratio (its segments ran minutes closer together).
  const perRound = (a, b) => +(median(r[a].rps_rounds.map((x, i) => (1000 * x) / r[b].rps_rounds[i])) / 1000).toFixed(3);
  for (const k of gateways) {
    summary.rps[`c${c}`][`${k}_vs_floor`] = +(r[k].rps / r.bare_passthrough.rps).toFixed(3);
    summary.rps[`c${c}`][`${k}_vs_floor_by_round`] = perRound(k, "bare_passthrough");
  }
  if (r.portkey) {
    summary.rps[`c${c}`].gateway_vs_portkey = +(r.gateway.rps / r.portkey.rps).toFixed(1);
    summary.rps[`c${c}`].gateway_vs_portkey_by_round = +perRound("gateway", "portkey").toFixed(1);
  }
  for (const k of names) if (r[k].non2xx || r[k].errors) console.error(`warning: ${k} answered ${r[k].non2xx} non-2xx and ${r[k].errors} errors at c=${c}`);
  if (c === 32 && r.direct.rps < 2 * r.gateway.rps) console.error("warning: the upstream may be the bottleneck (direct req/s < 2x gateway req/s)");
}

if (!QUICK) {
  const ttfb = (results.ttfb_stream_us = await interleaved(ours, Math.min(N_LATENCY, 2000), streamBody, true));
  results.loadavg.after_ttfb = load();
  summary.ttfb_stream_us = Object.fromEntries(
    gateways.map((k) => [k, { added_p50: ttfb[k].p50 - ttfb.direct.p50, over_floor_p50: ttfb[k].p50 - ttfb.bare_passthrough.p50 }]),
  );
}
if (portkey) {
  const pk = (results.portkey_latency_c1_us = await interleaved(["direct", "portkey"], N_LATENCY));
  results.loadavg.after_portkey = load();
  console.error("portkey latency c=1 (µs)", JSON.stringify(pk));
  summary.latency_c1_us.portkey = { added_p50: pk.portkey.p50 - pk.direct.p50, added_p99: pk.portkey.p99 - pk.direct.p99 };
}

// Logging really was on: every gateway request wrote a log.
const logs = await p.api("GET", `/accounts/${p.accountId}/ai-gateway/gateways/bench/logs?per_page=5`);
results.gateway_logs_written = logs.body.result_info.total_count;

results.loadavg.end = load();
mkdirSync(`${here}results`, { recursive: true });
writeFileSync(`${here}results/${QUICK ? "quick" : "latest"}.json`, JSON.stringify(results, null, 2));
console.log(JSON.stringify(results, null, 2));
await p.dispose();
await before?.p.dispose();
children.forEach((c) => c.kill());
process.exit(0);
