// What Workers Logs cost: one platform serving the same Worker (one console.log line, a 1 KiB answer) deployed
// three times — observability off, on at head_sampling_rate 1, on at a low rate (SAMPLED, default 0.01) — measured
// with wrk in alternating rounds (the order rotates, so load from elsewhere on the machine falls on all alike).
// Prints, per round and as medians, req/s and CPU µs per request of the platform's own process (the Node program:
// the tail events' receipt and storage) and of its workerd processes (the invocation, the tail worker), and the ratios
// to "off".
//   npm run build && node bench/workers/logs-cost.mjs [seconds per case, default 5] [rounds, default 3]
// Env: CLIENTS (wrk connections, default 8), SAMPLED (the low rate), BENCH_CLI (another build's edgecli.js).
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { freePort, startPlatform } from "../lib/platform.mjs";
import { loadText as load, median } from "../lib/stats.mjs";

const seconds = Number(process.argv[2] ?? 5);
const rounds = Number(process.argv[3] ?? 3);
const clients = Number(process.env.CLIENTS ?? 8);
const sampled = Number(process.env.SAMPLED ?? 0.01);
const dir = mkdtempSync(join(tmpdir(), "logs-cost-"));
const children = [];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** CPU seconds of one process (all its threads), and of its descendants (workerd) apart. */
function cpuOf(pid) {
  const ticks = (p) => {
    const f = readFileSync(`/proc/${p}/stat`, "utf8");
    const fields = f.slice(f.lastIndexOf(")") + 2).split(" ");
    return Number(fields[11]) + Number(fields[12]);
  };
  let children = 0;
  const visit = (p) => {
    try {
      for (const task of readdirSync(`/proc/${p}/task`))
        for (const c of readFileSync(`/proc/${p}/task/${task}/children`, "utf8").split(" ").filter(Boolean)) {
          children += ticks(Number(c));
          visit(Number(c));
        }
    } catch {
      // gone meanwhile
    }
  };
  visit(pid);
  return { platform: ticks(pid) / 100, workerd: children / 100 };
}

const CODE = `const body = "x".repeat(1024);
export default { async fetch(req) { console.log("served", req.url); return new Response(body); } };`;

const WORKERS = {
  off: undefined,
  "on-1": { enabled: true, head_sampling_rate: 1 },
  "on-sampled": { enabled: true, head_sampling_rate: sampled },
};

async function upload(p, port, name, observability) {
  const form = new FormData();
  form.append("metadata", JSON.stringify({ main_module: "index.js", compatibility_date: "2024-09-01", ...(observability && { observability }) }));
  form.append("index.js", new Blob([CODE], { type: "application/javascript+module" }), "index.js");
  const r = await fetch(`http://127.0.0.1:${port}/client/v4/accounts/${p.account}/workers/scripts/${name}`, {
    method: "PUT",
    headers: { authorization: `Bearer ${p.token}` },
    body: form,
  });
  if (r.status !== 200) throw new Error(`upload of ${name}: ${r.status} ${await r.text()}`);
}

async function wrk(port, name, pid) {
  const before = cpuOf(pid);
  const { stdout } = await promisify(execFile)("wrk", [
    `-t1`,
    `-c${clients}`,
    `-d${seconds}s`,
    `http://127.0.0.1:${port}/`,
    "-H",
    `Host: ${name}.workers.localhost`,
  ]);
  const after = cpuOf(pid);
  const requests = Number(/(\d+) requests in/.exec(stdout)?.[1] ?? 0);
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(stdout)?.[1] ?? 0);
  if (!requests || non2xx) throw new Error(`${name}: ${requests} requests, ${non2xx} not 200:\n${stdout}`);
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(stdout)[1]),
    platform: ((after.platform - before.platform) / requests) * 1e6,
    workerd: ((after.workerd - before.workerd) / requests) * 1e6,
  };
}

async function kept(p, port, name) {
  const now = Date.now();
  const r = await fetch(`http://127.0.0.1:${port}/client/v4/accounts/${p.account}/workers/observability/telemetry/query`, {
    method: "POST",
    headers: { authorization: `Bearer ${p.token}`, "content-type": "application/json" },
    body: JSON.stringify({
      queryId: "bench",
      timeframe: { from: now - 3600_000, to: now + 60_000 },
      view: "events",
      limit: 1,
      parameters: { filters: [{ key: "$workers.scriptName", operation: "eq", type: "string", value: name }] },
    }),
  });
  const body = await r.json();
  return body.result?.events?.count ?? `? (${JSON.stringify(body.errors)})`;
}

const stopAll = () => {
  for (const c of children) c.kill("SIGTERM");
  process.exit(130);
};
process.on("SIGINT", stopAll);
try {
  const port = await freePort();
  const p = await startPlatform({ port, stateDir: join(dir, "state"), children });
  for (const [name, o] of Object.entries(WORKERS)) await upload(p, port, name, o);
  // Warm every Worker (workerd started, code compiled) before the first round.
  for (const name of Object.keys(WORKERS))
    for (let i = 0; i < 20; i++) await fetch(`http://127.0.0.1:${port}/`, { headers: { host: `${name}.workers.localhost` } }).then((r) => r.text());
  console.log(
    `${new Date().toISOString()} load ${load()}; ${rounds} rounds of ${seconds} s, wrk -c${clients}; on-sampled at rate ${sampled}; ${process.env.BENCH_CLI ?? "this build"}`,
  );
  const names = Object.keys(WORKERS);
  const results = Object.fromEntries(names.map((n) => [n, []]));
  for (let r = 0; r < rounds; r++) {
    const order = names.map((_, i) => names[(i + r) % names.length]);
    for (const name of order) results[name].push(await wrk(port, name, p.pid));
    console.log(
      `round ${r + 1}: ` +
        names.map((n) => `${n} ${Math.round(results[n][r].rps)}/s (${results[n][r].platform.toFixed(0)}+${results[n][r].workerd.toFixed(0)} µs)`).join(" | "),
    );
  }
  await sleep(1000);
  console.log(`\nload ${load()}; medians (CPU µs per request: platform + workerd); ratios to off (req/s; by round: min–max)`);
  const off = results.off;
  for (const n of names) {
    const rps = median(results[n].map((m) => m.rps));
    const byRound = results[n].map((m, i) => m.rps / off[i].rps);
    const plat = median(results[n].map((m) => m.platform));
    const wd = median(results[n].map((m) => m.workerd));
    const cpuOff = median(off.map((m) => m.platform)) + median(off.map((m) => m.workerd));
    console.log(
      `${n.padEnd(10)} ${Math.round(rps)} req/s  ${(rps / median(off.map((m) => m.rps))).toFixed(3)} of off (${Math.min(...byRound).toFixed(2)}–${Math.max(...byRound).toFixed(2)})  ` +
        `CPU ${plat.toFixed(0)} + ${wd.toFixed(0)} = ${(plat + wd).toFixed(0)} µs (${((plat + wd) / cpuOff).toFixed(3)} of off)  events kept ${n === "off" ? "-" : await kept(p, port, n)}`,
    );
  }
} finally {
  process.off("SIGINT", stopAll);
  for (const c of children) c.kill("SIGTERM");
  await sleep(1000);
  rmSync(dir, { recursive: true, force: true });
}
