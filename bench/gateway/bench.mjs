// AI gateway overhead, in one run, against one local upstream (see README in docs/benchmarks.md):
//   direct to the upstream, through our gateway (authentication and logging on), through Portkey 1.15.2.
// A bare undici pass-through is measured too, as the floor any Node proxy starts from.
// Reports added latency p50/p99 at concurrency 1 (own client, µs resolution), req/s at concurrency 32
// (autocannon), and added time to first byte for streaming (our gateway only; Portkey's streaming fails on Node 20).
// Usage: npm run build && cd bench/gateway && npm install && flock /tmp/bench.lock node bench.mjs
// Environment: N (c=1 requests per target, default 3000), SEGMENT (20), WARMUP (sequential requests per target
// before the c=1 rounds, 500), WARMUP_S (seconds of c=8 load per target first, 4), DURATION (c=32 seconds, 10),
// QUICK=1 (c=1 latency of direct, bare and gateway only), GATEWAY_NODE_OPTIONS (e.g. --cpu-prof, for the platform),
// GATEWAY_LOGS=0 / GATEWAY_AUTH=0 (the gateway without logging / authentication, to see what each costs),
// COMPARE_LOGS=1 (a gateway without logs takes turns with the one with logs, in the same run).
import { spawn, execSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import { Agent, request } from "undici";

const here = fileURLToPath(new URL(".", import.meta.url));
const root = fileURLToPath(new URL("../../", import.meta.url));
const N_LATENCY = Number(process.env.N ?? 3000);
const DURATION = Number(process.env.DURATION ?? 10);
/** Requests per target in a row at c=1; the targets take turns, so drift of a shared machine hits all alike. */
const SEGMENT = Number(process.env.SEGMENT ?? 20);
const WARMUP = Number(process.env.WARMUP ?? 500);
const WARMUP_S = Number(process.env.WARMUP_S ?? 4);
/** QUICK=1: latency at c=1 only (direct, bare, gateway), for iterating on the gateway; no Portkey, no c=32. */
const QUICK = process.env.QUICK === "1";
const children = [];
process.on("exit", () => children.forEach((c) => c.kill()));

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

// A bare undici pass-through: the floor any Node proxy starts from.
const bare = spawnChild(process.execPath, [`${here}bare-proxy.mjs`, upstream]);
const barePort = Number(await firstLine(bare, (b) => /^(\d+)\n/.exec(b)?.[1]));

// 2. Our platform, with a gateway that has authentication and logging on.
const { startTestPlatform } = await import(`${root}dist/core/testing/platform.js`);
// GATEWAY_NODE_OPTIONS (e.g. --cpu-prof --cpu-prof-dir=/tmp/prof) goes to the platform's process only.
const nodeArgs = process.env.GATEWAY_NODE_OPTIONS?.split(" ").filter(Boolean);
const p = await startTestPlatform({ args: ["--dns-port", "0", "--provider-base-url", `openai=${upstream}`], nodeArgs });
const gwBody = {
  id: "bench",
  cache_ttl: 0,
  cache_invalidate_on_update: false,
  collect_logs: process.env.GATEWAY_LOGS !== "0",
  rate_limiting_interval: 0,
  rate_limiting_limit: 0,
  authentication: process.env.GATEWAY_AUTH !== "0",
};
if ((await p.api("POST", `/accounts/${p.accountId}/ai-gateway/gateways`, gwBody)).status !== 200) throw new Error("gateway create failed");
// COMPARE_LOGS=1: a second gateway, the same but without logs, takes turns with the first at c=1 (what logging costs).
const COMPARE_LOGS = process.env.COMPARE_LOGS === "1";
if (
  COMPARE_LOGS &&
  (await p.api("POST", `/accounts/${p.accountId}/ai-gateway/gateways`, { ...gwBody, id: "bench-nologs", collect_logs: false })).status !== 200
)
  throw new Error("gateway create failed");
const tok = await p.api("POST", `/accounts/${p.accountId}/tokens`, { name: "bench", permissions: ["ai_gateway_run"] });
const runToken = tok.body.result.value;

// 3. Portkey.
const portkeyPort = 18000 + Math.floor(Math.random() * 1000);
let portkey;
if (!QUICK) {
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
const targets = {
  // pid: whose CPU is counted (for direct, the upstream's own; for the others, the proxy's alone).
  direct: { url: `${upstream}/chat/completions`, headers: base, pid: mock.pid },
  bare_passthrough: { url: `http://127.0.0.1:${barePort}/`, headers: base, pid: bare.pid },
  gateway: {
    url: `${p.url}/v1/${p.accountId}/bench/openai/chat/completions`,
    headers: { ...base, "gw-aig-authorization": `Bearer ${runToken}` },
    pid: p.process.pid,
  },
};
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

/** user+system CPU time of a process in µs, from /proc (clock ticks of 10 ms). */
function cpuUs(pid) {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(f[11]) + Number(f[12])) * 10_000;
}

/**
 * req/s at the given concurrency, and the CPU the serving process spent per request: on a loaded machine
 * req/s swings with the neighbours, CPU per request much less.
 */
function throughput(t, connections, duration = DURATION) {
  const before = cpuUs(t.pid);
  return new Promise((resolve, reject) => {
    autocannon({ url: t.url, method: "POST", headers: t.headers, body, connections, duration }, (err, res) => {
      if (err) return reject(err);
      const cpu_us_per_req = Math.round((cpuUs(t.pid) - before) / res.requests.total);
      resolve({
        rps: Math.round(res.requests.average),
        cpu_us_per_req,
        non2xx: res.non2xx,
        errors: res.errors,
        p50ms: res.latency.p50,
        p99ms: res.latency.p99,
      });
    });
  });
}

const results = {
  date: new Date().toISOString(),
  nproc: cpus().length,
  loadavg_at_start: loadavg().map((x) => +x.toFixed(1)),
  node: process.version,
  commit: execSync("git rev-parse --short HEAD", { cwd: root }).toString().trim(),
  method: { n_latency: N_LATENCY, segment: SEGMENT, warmup: WARMUP, warmup_s: WARMUP_S, duration_s: DURATION },
  latency_c1_us: {},
  throughput_c32: {},
  ttfb_stream_us: {},
};
const ours = ["direct", "bare_passthrough", "gateway", ...(COMPARE_LOGS ? ["gateway_no_logs"] : [])];
// Everything of ours is measured first, then Portkey (latency against direct again, in a phase of its own, and
// req/s), so that each added latency is a difference taken under one set of conditions, with no heavy neighbour
// (1.4-1.9 ms of CPU per request) running between our segments. Direct's own p50 depends on that: 71-106 µs in
// Portkey's phase, 146-206 µs in ours (2026-11-22 03:45-03:47 UTC).
// Warm-up under load first: the JIT of a large program (the platform) keeps compiling for thousands of requests,
// and its compiler threads' CPU would otherwise be counted against the first measurements.
for (const name of ours) await throughput(targets[name], 8, WARMUP_S).catch(() => undefined);
results.latency_c1_us = await interleaved(ours, N_LATENCY);
console.error("latency c=1 (µs)", JSON.stringify(results.latency_c1_us));
const added = (name, q) => (results.latency_c1_us[name][q] - results.latency_c1_us.direct[q]) / 1000;
results.summary = {
  bare_passthrough_added_p50_ms: added("bare_passthrough", "p50"),
  gateway_added_p50_ms: added("gateway", "p50"),
  gateway_added_p99_ms: added("gateway", "p99"),
  ...(COMPARE_LOGS ? { gateway_no_logs_added_p50_ms: added("gateway_no_logs", "p50"), gateway_no_logs_added_p99_ms: added("gateway_no_logs", "p99") } : {}),
  bare_added_p99_ms: added("bare_passthrough", "p99"),
  cpu_us_per_req_c1: Object.fromEntries(ours.map((k) => [k, results.latency_c1_us[k].cpu_us_per_req])),
};
if (!QUICK) {
  const t = results.throughput_c32;
  for (const name of ours) {
    t[name] = await throughput(targets[name], 32);
    console.error(name, "c=32", JSON.stringify(t[name]));
  }
  results.ttfb_stream_us = await interleaved(ours, Math.min(N_LATENCY, 2000), streamBody, true);
  const ttfb = results.ttfb_stream_us;

  await throughput(targets.portkey, 8, WARMUP_S).catch(() => undefined);
  results.portkey_latency_c1_us = await interleaved(["direct", "portkey"], N_LATENCY);
  console.error("portkey latency c=1 (µs)", JSON.stringify(results.portkey_latency_c1_us));
  t.portkey = await throughput(targets.portkey, 32);
  console.error("portkey c=32", JSON.stringify(t.portkey));
  const pk = results.portkey_latency_c1_us;
  Object.assign(results.summary, {
    portkey_added_p50_ms: (pk.portkey.p50 - pk.direct.p50) / 1000,
    portkey_added_p99_ms: (pk.portkey.p99 - pk.direct.p99) / 1000,
    portkey_cpu_us_per_req_c1: pk.portkey.cpu_us_per_req,
    gateway_rps_c32: t.gateway.rps,
    portkey_rps_c32: t.portkey.rps,
    direct_rps_c32: t.direct.rps,
    bare_passthrough_rps_c32: t.bare_passthrough.rps,
    gateway_vs_portkey_rps: +(t.gateway.rps / t.portkey.rps).toFixed(1),
    cpu_us_per_req: Object.fromEntries(Object.entries(t).map(([k, v]) => [k, v.cpu_us_per_req])),
    gateway_vs_portkey_cpu: +(t.portkey.cpu_us_per_req / t.gateway.cpu_us_per_req).toFixed(1),
    bare_added_ttfb_p50_ms: (ttfb.bare_passthrough.p50 - ttfb.direct.p50) / 1000,
    gateway_added_ttfb_p50_ms: (ttfb.gateway.p50 - ttfb.direct.p50) / 1000,
    gateway_added_ttfb_p99_ms: (ttfb.gateway.p99 - ttfb.direct.p99) / 1000,
  });
  if (t.direct.rps < 3 * t.gateway.rps) console.error("warning: the upstream may be the bottleneck (direct req/s < 3x gateway req/s)");
}

// Logging really was on: every gateway request wrote a log.
const logs = await p.api("GET", `/accounts/${p.accountId}/ai-gateway/gateways/bench/logs?per_page=5`);
results.gateway_logs_written = logs.body.result_info.total_count;

mkdirSync(`${here}results`, { recursive: true });
writeFileSync(`${here}results/${QUICK ? "quick" : "latest"}.json`, JSON.stringify(results, null, 2));
console.log(JSON.stringify(results, null, 2));
await p.dispose();
children.forEach((c) => c.kill());
process.exit(0);
