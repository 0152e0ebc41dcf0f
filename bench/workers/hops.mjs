// Where the time of a worker request goes: each hop measured alone (req/s and CPU per request of every
// process: client, platform, workerd), for a worker doing env.BUCKET.get and one answering without a binding.
// Hops: workerd direct; the edge port; the binding backend alone (as workerd calls it).
// Run after `npm run build`: node bench/workers/hops.mjs [seconds=3] [clients=1,8]
// ONLY=<regexp> runs only the matching hops; PROF_DIR=<dir> writes a CPU profile of the platform per hop.
import { loadavg } from "node:os";
import { startTestPlatform } from "../../dist/core/testing/platform.js";
import { cpuOf, timedLoops } from "./loops.mjs";
import { R2_BENCH_BINDING, scriptInfo, uploadWorker } from "./upload.mjs";
import { Pool, request } from "../../node_modules/undici/index.js";

const SECONDS = Number(process.argv[2] ?? 3);
const CLIENTS = (process.argv[3] ?? "1,8").split(",").map(Number);
const SMALL = "x".repeat(1024);

const GET_WORKER = `export default { async fetch(req, env) {
  const o = await env.BUCKET.get("small");
  return o ? new Response(o.body) : new Response("missing", { status: 404 });
} };`;
const PLAIN_WORKER = `const body = "x".repeat(1024); export default { async fetch() { return new Response(body); } };`;

/** `target`: an origin, or { socketPath } for a unix socket. */
async function measure(label, target, headers, clients, pids) {
  if (globalThis.only && !globalThis.only.test(label)) return;
  const pool =
    typeof target === "string"
      ? new Pool(target, { connections: clients })
      : new Pool("http://localhost", { connections: clients, socketPath: target.socketPath });
  const once = async () => {
    const r = await pool.request({ path: "/", method: "GET", headers });
    const b = await r.body.text();
    if (r.statusCode !== 200) throw new Error(`${label}: ${r.statusCode} ${b.slice(0, 100)}`);
  };
  let before;
  let self0;
  const { n, secs } = await timedLoops(once, clients, SECONDS, () => {
    if (process.env.PROF_DIR) process.kill(pids.platform, "SIGUSR2");
    before = Object.fromEntries(Object.entries(pids).map(([k, p]) => [k, cpuOf(p)]));
    self0 = process.cpuUsage();
  });
  const self = process.cpuUsage(self0);
  if (process.env.PROF_DIR) process.kill(pids.platform, "SIGUSR2");
  const per = Object.entries(pids).map(([k, p]) => `${k} ${((cpuOf(p) - before[k]) / n).toFixed(0)}`);
  per.unshift(`client ${((self.user + self.system) / n).toFixed(0)}`);
  console.log(`${label.padEnd(28)} c=${clients}  ${(n / secs).toFixed(0).padStart(6)} req/s   CPU µs/req: ${per.join(", ")}`);
  await pool.close();
}

console.log(
  `${new Date().toISOString()} load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")}`,
);
const p = await startTestPlatform({
  args: ["--dns-port", "0"],
  env: process.env.PROF_DIR ? { NODE_OPTIONS: `--require ${new URL("./profile-preload.cjs", import.meta.url).pathname}`, PROF_OUT: process.env.PROF_DIR } : {},
});
try {
  const created = await p.api("POST", `/accounts/${p.accountId}/r2/buckets`, { name: "bench" });
  if (created.status !== 200) throw new Error(JSON.stringify(created.body));
  await uploadWorker(p, "hop-get", GET_WORKER, [R2_BENCH_BINDING]);
  await uploadWorker(p, "hop-plain", PLAIN_WORKER, []);
  const seed = await request(`${p.apiUrl}/accounts/${p.accountId}/r2/buckets/bench/objects/small`, { method: "PUT", body: SMALL, headers: p.headers() });
  await seed.body.text();
  const edge = p.url;
  const edgePort = new URL(edge).port;
  const get = scriptInfo(p, "hop-get");
  const plain = scriptInfo(p, "hop-plain");
  const pids = { platform: p.process.pid, workerd: get.pid, workerdPlain: plain.pid };
  console.error(`pids ${JSON.stringify(pids)}`);
  const op = JSON.stringify({ version: 1, method: "get", object: "small" });
  globalThis.only = process.env.ONLY ? new RegExp(process.env.ONLY) : undefined;
  for (const c of CLIENTS) {
    await measure("binding backend alone", get.backend.socket, { [get.backend.header]: get.backend.value, "cf-r2-request": op }, c, pids);
    await measure("workerd plain direct", plain.socket, {}, c, pids);
    await measure("workerd plain via edge", edge, { host: `hop-plain.workers.localhost:${edgePort}` }, c, pids);
    await measure("workerd get direct", get.socket, {}, c, pids);
    await measure("workerd get via edge", edge, { host: `hop-get.workers.localhost:${edgePort}` }, c, pids);
  }
} finally {
  await p.dispose();
}
