// AI gateway overhead, in one run, against one local upstream (see README in docs/benchmarks.md):
//   direct to the upstream, through our gateway (authentication and logging on), through Portkey 1.15.2.
// A bare undici pass-through is measured too, as the floor any Node proxy starts from.
// Reports added latency p50/p99 at concurrency 1 (own client, µs resolution), req/s at concurrency 32
// (autocannon), and added time to first byte for streaming (our gateway only; Portkey's streaming fails on Node 20).
// Usage: (cd /work/main && npx tsc -p .) && cd bench/gateway && npm install && node bench.mjs
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
const p = await startTestPlatform({ args: ["--dns-port", "0", "--provider-base-url", `openai=${upstream}`] });
const gwBody = { id: "bench", cache_ttl: 0, cache_invalidate_on_update: false, collect_logs: true, rate_limiting_interval: 0, rate_limiting_limit: 0, authentication: true };
if ((await p.api("POST", `/accounts/${p.accountId}/ai-gateway/gateways`, gwBody)).status !== 200) throw new Error("gateway create failed");
const tok = await p.api("POST", `/accounts/${p.accountId}/tokens`, { name: "bench", permissions: ["ai_gateway_run"] });
const runToken = tok.body.result.value;

// 3. Portkey.
const portkeyPort = 18000 + Math.floor(Math.random() * 1000);
const portkey = spawnChild(process.execPath, [`${here}node_modules/@portkey-ai/gateway/build/start-server.js`, "--headless", `--port=${portkeyPort}`]);
await firstLine(portkey, (b) => /listening|running|started|8787|\d{4}/i.test(b) && b);
await new Promise((r) => setTimeout(r, 500));

const body = JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "Say hello" }] });
const streamBody = JSON.stringify({ model: "gpt-4o-mini", stream: true, stream_options: { include_usage: true }, messages: [{ role: "user", content: "Say hello" }] });
const base = { "content-type": "application/json", authorization: "Bearer sk-bench" };
const targets = {
  // pid: whose CPU is counted (for direct, the upstream's own; for the others, the proxy's alone).
  direct: { url: `${upstream}/chat/completions`, headers: base, pid: mock.pid },
  bare_passthrough: { url: `http://127.0.0.1:${barePort}/`, headers: base, pid: bare.pid },
  gateway: { url: `${p.url}/v1/${p.accountId}/bench/openai/chat/completions`, headers: { ...base, "gw-aig-authorization": `Bearer ${runToken}` }, pid: p.process.pid },
  portkey: { url: `http://127.0.0.1:${portkeyPort}/v1/chat/completions`, headers: { ...base, "x-portkey-provider": "openai", "x-portkey-custom-host": upstream }, pid: portkey.pid },
};

// Sanity: each target answers 200 with the upstream's body.
for (const [name, t] of Object.entries(targets)) {
  const r = await request(t.url, { method: "POST", headers: t.headers, body });
  const text = await r.body.text();
  if (r.statusCode !== 200 || !text.includes("bench upstream")) throw new Error(`${name}: ${r.statusCode} ${text.slice(0, 200)}`);
}

const pct = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];

/** Closed loop, one request at a time over one keep-alive connection; per-request time in µs. */
async function latency(t, n, reqBody = body, firstByte = false) {
  const agent = new Agent({ connections: 1, keepAliveTimeout: 60_000 });
  const times = [];
  for (let i = 0; i < n + 200; i++) {
    const t0 = process.hrtime.bigint();
    const r = await request(t.url, { method: "POST", headers: t.headers, body: reqBody, dispatcher: agent });
    let tFirst;
    for await (const _c of r.body) {
      tFirst ??= process.hrtime.bigint();
    }
    const tEnd = process.hrtime.bigint();
    if (i >= 200) times.push(Number(((firstByte ? tFirst : tEnd) - t0) / 1000n));
  }
  await agent.close();
  times.sort((a, b) => a - b);
  return { p50: pct(times, 0.5), p99: pct(times, 0.99), mean: Math.round(times.reduce((a, b) => a + b, 0) / times.length) };
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
function throughput(t, connections) {
  const before = cpuUs(t.pid);
  return new Promise((resolve, reject) => {
    autocannon({ url: t.url, method: "POST", headers: t.headers, body, connections, duration: DURATION }, (err, res) => {
      if (err) return reject(err);
      const cpu_us_per_req = Math.round((cpuUs(t.pid) - before) / res.requests.total);
      resolve({ rps: Math.round(res.requests.average), cpu_us_per_req, non2xx: res.non2xx, errors: res.errors, p50ms: res.latency.p50, p99ms: res.latency.p99 });
    });
  });
}

const results = { date: new Date().toISOString(), nproc: cpus().length, loadavg_at_start: loadavg().map((x) => +x.toFixed(1)), node: process.version, commit: execSync("git rev-parse --short HEAD", { cwd: root }).toString().trim(), latency_c1_us: {}, throughput_c32: {}, ttfb_stream_us: {} };
for (const name of Object.keys(targets)) {
  await throughput(targets[name], 8).catch(() => undefined); // warm-up
  results.latency_c1_us[name] = await latency(targets[name], N_LATENCY);
  results.throughput_c32[name] = await throughput(targets[name], 32);
  console.error(name, JSON.stringify(results.latency_c1_us[name]), JSON.stringify(results.throughput_c32[name]));
}
for (const name of ["direct", "bare_passthrough", "gateway"]) {
  results.ttfb_stream_us[name] = await latency(targets[name], Math.min(N_LATENCY, 2000), streamBody, true);
}
const added = (name, q) => results.latency_c1_us[name][q] - results.latency_c1_us.direct[q];
results.summary = {
  bare_passthrough_added_p50_ms: added("bare_passthrough", "p50") / 1000,
  gateway_added_p50_ms: added("gateway", "p50") / 1000,
  gateway_added_p99_ms: added("gateway", "p99") / 1000,
  portkey_added_p50_ms: added("portkey", "p50") / 1000,
  portkey_added_p99_ms: added("portkey", "p99") / 1000,
  gateway_rps_c32: results.throughput_c32.gateway.rps,
  portkey_rps_c32: results.throughput_c32.portkey.rps,
  direct_rps_c32: results.throughput_c32.direct.rps,
  gateway_vs_portkey_rps: +(results.throughput_c32.gateway.rps / results.throughput_c32.portkey.rps).toFixed(1),
  cpu_us_per_req: Object.fromEntries(Object.entries(results.throughput_c32).map(([k, v]) => [k, v.cpu_us_per_req])),
  gateway_vs_portkey_cpu: +(results.throughput_c32.portkey.cpu_us_per_req / results.throughput_c32.gateway.cpu_us_per_req).toFixed(1),
  bare_passthrough_rps_c32: results.throughput_c32.bare_passthrough.rps,
  bare_added_ttfb_p50_ms: (results.ttfb_stream_us.bare_passthrough.p50 - results.ttfb_stream_us.direct.p50) / 1000,
  gateway_added_ttfb_p50_ms: (results.ttfb_stream_us.gateway.p50 - results.ttfb_stream_us.direct.p50) / 1000,
  gateway_added_ttfb_p99_ms: (results.ttfb_stream_us.gateway.p99 - results.ttfb_stream_us.direct.p99) / 1000,
};
if (results.throughput_c32.direct.rps < 3 * results.throughput_c32.gateway.rps) console.error("warning: the upstream may be the bottleneck (direct req/s < 3x gateway req/s)");

// Logging really was on: every gateway request wrote a log.
const logs = await p.api("GET", `/accounts/${p.accountId}/ai-gateway/gateways/bench/logs?per_page=5`);
results.gateway_logs_written = logs.body.result_info.total_count;

mkdirSync(`${here}results`, { recursive: true });
writeFileSync(`${here}results/latest.json`, JSON.stringify(results, null, 2));
console.log(JSON.stringify(results, null, 2));
await p.dispose();
children.forEach((c) => c.kill());
process.exit(0);
