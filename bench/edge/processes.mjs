// Does one proxy process per CPU raise a Node proxy's rate here? The floor of any Node proxy (a bare Node `http`
// server passing requests to an nginx origin through an undici Pool) as one process, and as one process per CPU
// accepting on one shared listening socket (`cluster` with SCHED_NONE: the kernel hands each connection to
// whichever process accepts it, as the DNS answering processes share their socket). wrk at 32 connections, the two
// in alternating order. Run as root (the origin listens on 127.0.0.143:80):
//   node bench/edge/processes.mjs [seconds] [connections]      (BENCH_ROUNDS, default 3; BENCH_PROCESSES, default CPUs)
import { execFileSync, spawn } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const seconds = Number(process.argv[2] ?? 8);
const connections = Number(process.argv[3] ?? 32);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const processes = Number(process.env.BENCH_PROCESSES ?? cpus().length);
const ORIGIN = "127.0.0.143";
const dir = mkdtempSync(join(tmpdir(), "edge-processes-bench-"));
chmodSync(dir, 0o755);
const children = [];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

writeFileSync(join(dir, "1k.bin"), Buffer.alloc(1024, 97));
writeFileSync(
  join(dir, "nginx.conf"),
  `worker_processes 1; pid ${dir}/nginx.pid; error_log ${dir}/nginx-error.log; daemon off;
events { worker_connections 4096; }
http { access_log off; server { listen ${ORIGIN}:80; root ${dir}; } }`,
);
const floor = fileURLToPath(new URL("./cluster-floors.cjs", import.meta.url));

function start(cmd, args) {
  const c = spawn(cmd, args, { stdio: ["ignore", "ignore", "inherit"] });
  children.push(c);
  return c;
}

function wrk(url) {
  const out = execFileSync("wrk", ["-t2", `-c${connections}`, `-d${seconds}s`, "--latency", url], { encoding: "utf8" });
  return { rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0), p50: /50%\s+([\d.]+\w+)/.exec(out)?.[1] };
}

try {
  start("nginx", ["-c", join(dir, "nginx.conf")]);
  start(process.execPath, [floor, "proxy", "18095", "1", ORIGIN]);
  start(process.execPath, [floor, "proxy", "18096", String(processes), ORIGIN]);
  await sleep(1500);
  wrk("http://127.0.0.1:18095/1k.bin"); // warm-up of both, not counted
  wrk("http://127.0.0.1:18096/1k.bin");
  console.log(
    `# ${new Date().toISOString()} ${cpus().length} × ${cpus()[0].model}, Node ${process.version}, load ${loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")}`,
  );
  console.log(`# wrk -t2 -c${connections} -d${seconds}s, 1 KiB GET, the undici pass-through as 1 process and as ${processes}`);
  const ratios = [];
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? ["one", "many"] : ["many", "one"];
    const x = {};
    for (const which of order) x[which] = wrk(`http://127.0.0.1:${which === "one" ? 18095 : 18096}/1k.bin`);
    ratios.push(x.many.rps / x.one.rps);
    console.log(
      `round ${r + 1} (load ${loadavg()[0].toFixed(1)}): 1 process ${x.one.rps.toFixed(0)} req/s (p50 ${x.one.p50}), ${processes} processes ${x.many.rps.toFixed(0)} req/s (p50 ${x.many.p50}); ${(x.many.rps / x.one.rps).toFixed(2)}×`,
    );
  }
  console.log(`median ${processes} processes / 1 process: ${[...ratios].sort((a, b) => a - b)[Math.floor(ratios.length / 2)].toFixed(2)}×`);
} finally {
  for (const c of children) c.kill("SIGTERM");
  await sleep(500);
  rmSync(dir, { recursive: true, force: true });
}
