// Issue 33 item 7: a Worker through the edge against the same Worker's workerd asked directly on its unix socket (the
// ceiling), in alternating rounds, with the same keep-alive client (undici Pool loops, bench/workers/loops.mjs). The
// Worker answers 1 KiB without bindings. Prints each round and the median edge / direct, sequential and at 8 clients.
// Env: BENCH_SECONDS (per case, default 3), BENCH_ROUNDS (default 3), BENCH_CLIENTS (default 1,8); BENCH_PROF_DIR: the
// platform runs with Node's CPU profiler and writes its profile there when it stops (read the top frames with
// bench/edge/cpu-profile-top.mjs); BENCH_EDGE_NODE_ARGS: other Node options for the platform's process.
import { loadavg } from "node:os";
import { Pool } from "../../node_modules/undici/index.js";
import { startTestPlatform } from "../../dist/core/testing/platform.js";
import { cpuOf, timedLoops } from "../workers/loops.mjs";
import { EDGE_BENCH_WORKERS, scriptInfo, uploadWorker } from "../workers/upload.mjs";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CLIENTS = (process.env.BENCH_CLIENTS ?? "1,8").split(",").map(Number);
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(" ");
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const profDir = process.env.BENCH_PROF_DIR;
const p = await startTestPlatform({
  args: ["--dns-port", "0"],
  nodeArgs: [...(profDir ? ["--cpu-prof", "--cpu-prof-dir", profDir] : []), ...(process.env.BENCH_EDGE_NODE_ARGS?.split(" ").filter(Boolean) ?? [])],
});
try {
  await uploadWorker(p, "ratio-plain", EDGE_BENCH_WORKERS.plain.code, []);
  const port = new URL(p.url).port;
  // The platform's log (which names the live workerd's socket) is written asynchronously.
  let socketPath;
  for (let i = 0; i < 100 && !socketPath; i++) {
    try {
      socketPath = scriptInfo(p, "ratio-plain").socket.socketPath;
    } catch {
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  console.log(`# ${new Date().toISOString()} load ${load()}; ${ROUNDS} rounds of ${SECONDS} s; a Worker answering 1 KiB`);
  const paths = {
    direct: { pool: (c) => new Pool("http://localhost", { connections: c, socketPath }), headers: {} },
    edge: { pool: (c) => new Pool(`http://127.0.0.1:${port}`, { connections: c }), headers: { host: `ratio-plain.workers.localhost:${port}` } },
  };
  for (const clients of CLIENTS) {
    const ratios = [];
    const rates = { direct: [], edge: [] };
    for (let round = 0; round < ROUNDS; round++) {
      // Alternating which goes first, so that a change of load between the two halves does not favour one.
      const order = round % 2 === 0 ? ["direct", "edge"] : ["edge", "direct"];
      const got = {};
      for (const path of order) {
        const pool = paths[path].pool(clients);
        const once = async () => {
          const r = await pool.request({ path: "/", method: "GET", headers: paths[path].headers });
          const b = await r.body.text();
          if (r.statusCode !== 200 || b.length !== 1024) throw new Error(`bad answer ${r.statusCode} ${b.slice(0, 100)}`);
        };
        let cpu0 = 0;
        const { n, secs } = await timedLoops(once, clients, SECONDS, () => (cpu0 = cpuOf(p.process.pid)));
        got[path] = { rps: n / secs, cpu: (cpuOf(p.process.pid) - cpu0) / n };
        await pool.close();
      }
      rates.direct.push(got.direct.rps);
      rates.edge.push(got.edge.rps);
      ratios.push(got.edge.rps / got.direct.rps);
      console.log(
        `c=${clients} round ${round + 1}: direct ${got.direct.rps.toFixed(0)} req/s, edge ${got.edge.rps.toFixed(0)} req/s (platform ${got.edge.cpu.toFixed(0)} µs CPU/req), edge/direct ${(got.edge.rps / got.direct.rps).toFixed(2)}; load ${load()}`,
      );
    }
    console.log(
      `c=${clients}: median direct ${median(rates.direct).toFixed(0)}, edge ${median(rates.edge).toFixed(0)}, edge/direct median of rounds ${median(ratios).toFixed(2)}`,
    );
  }
} finally {
  await p.dispose();
}
