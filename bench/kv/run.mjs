#!/usr/bin/env node
// KV benchmark: `edgecli kv ... --local` against wrangler 3 (`wrangler kv ... --local`), plus one listing page by
// prefix from a namespace of 1,000,000 keys. Not part of the test suite.
//
//   cd bench/kv && npm install        # wrangler 3.114 as a peer, in bench/kv/node_modules only
//   (cd ../.. && npx tsc -p .)        # edgecli from dist/
//   node bench/kv/run.mjs [--runs 5] [--million-keys 1000000] [--skip-wrangler] [--without-extra-ca-certs]
//
// NODE_EXTRA_CA_CERTS makes every Node process parse that CA bundle before running any code (about 70 ms per
// process on the project VM, where it is set globally). --without-extra-ca-certs removes it for both tools.
//
// Wall time is measured around the whole process; peak memory is the largest summed RSS of the process tree
// (wrangler starts workerd as a child), sampled from /proc every 5 ms.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { binNodeFlags } from "../lib/bin-flags.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..");
const EDGECLI = join(root, "dist", "bin", "edgecli.js");
const WRANGLER = join(here, "node_modules", "wrangler", "bin", "wrangler.js");

const argv = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : fallback;
};
const RUNS = Number(opt("runs", "5"));
const MILLION = Number(opt("million-keys", "1000000"));
const SKIP_WRANGLER = argv.includes("--skip-wrangler");
const WITHOUT_EXTRA_CA = argv.includes("--without-extra-ca-certs");
const childEnv = { ...process.env };
if (WITHOUT_EXTRA_CA) delete childEnv.NODE_EXTRA_CA_CERTS;
const NAMESPACE_ID = "0123456789abcdef0123456789abcdef";

if (!existsSync(EDGECLI)) throw new Error(`build first: ${EDGECLI} is missing (npx tsc -p .)`);
if (!SKIP_WRANGLER && !existsSync(WRANGLER)) throw new Error(`install the peer first: cd bench/kv && npm install`);

/** RSS in bytes of pid and all its descendants, from /proc. */
function treeRss(rootPid) {
  const parents = new Map();
  const rss = new Map();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      parents.set(Number(name), Number(fields[1]));
      rss.set(Number(name), Number(fields[21]) * 4096);
    } catch {
      // the process ended while we looked
    }
  }
  let total = 0;
  for (const [pid, bytes] of rss) {
    for (let p = pid; p > 1; p = parents.get(p) ?? 0) {
      if (p === rootPid) {
        total += bytes;
        break;
      }
    }
  }
  return total;
}

const TIME = existsSync("/usr/bin/time") ? "/usr/bin/time" : undefined;
let timeFile = 0;

/**
 * Runs a command; returns wall ms, CPU ms (user+sys via /usr/bin/time, which counts the processes it waited
 * for; steadier than wall time on a busy machine), peak tree RSS, and output.
 */
function measure(cmd, args, opts = {}) {
  return new Promise((resolve, reject) => {
    const cpuFile = join(tmpdir(), `kv-bench-time-${process.pid}-${timeFile++}`);
    if (TIME) {
      args = ["-f", "%U %S", "-o", cpuFile, cmd, ...args];
      cmd = TIME;
    }
    const start = process.hrtime.bigint();
    const child = spawn(cmd, args, { cwd: opts.cwd, env: { ...childEnv, ...opts.env }, stdio: ["ignore", "pipe", "pipe"] });
    let peak = 0;
    const timer = setInterval(() => {
      peak = Math.max(peak, treeRss(child.pid));
    }, 5);
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    child.on("error", reject);
    child.on("close", (code) => {
      clearInterval(timer);
      const ms = Number(process.hrtime.bigint() - start) / 1e6;
      if (code !== 0) return reject(new Error(`${cmd} ${args.join(" ")} exited ${code}\n${out}\n${err}`));
      let cpu = NaN;
      if (TIME) {
        const [user, sys] = readFileSync(cpuFile, "utf8").trim().split("\n").pop().split(" ").map(Number);
        cpu = (user + sys) * 1000;
        rmSync(cpuFile, { force: true });
      }
      resolve({ ms, cpu, peak, out, err });
    });
  });
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const mib = (b) => `${(b / 1048576).toFixed(0)} MiB`;
const secs = (ms) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(0)} ms`);

async function series(label, cmd, args, opts) {
  const runs = [];
  for (let i = 0; i < RUNS; i++) runs.push(await measure(cmd, args, opts));
  return { label, ms: median(runs.map((r) => r.ms)), cpu: median(runs.map((r) => r.cpu)), peak: Math.max(...runs.map((r) => r.peak)), out: runs[0].out };
}

const work = mkdtempSync(join(tmpdir(), "kv-bench-"));
try {
  const edgeState = join(work, "edge-state");
  const wranglerDir = join(work, "wrangler-project");
  const bulkFile = join(work, "bulk-10000.json");
  // A project for wrangler (its --local needs a config with the binding) and the same id for edgecli.
  mkdirSync(wranglerDir);
  writeFileSync(
    join(wranglerDir, "wrangler.toml"),
    `name = "bench"\nmain = "index.js"\ncompatibility_date = "2024-09-01"\n[[kv_namespaces]]\nbinding = "BENCH"\nid = "${NAMESPACE_ID}"\n`,
  );
  writeFileSync(join(wranglerDir, "index.js"), "export default { fetch() { return new Response('ok') } }\n");
  const entries = Array.from({ length: 10_000 }, (_, i) => ({ key: `bulk/${String(i).padStart(5, "0")}`, value: `value number ${i} `.repeat(4) }));
  writeFileSync(bulkFile, JSON.stringify(entries));

  // As the bin starts Node (its flags), so its code cache is the one V8 accepts.
  const edge = (args) => [...binNodeFlags(EDGECLI), EDGECLI, "kv", ...args, "--namespace-id", NAMESPACE_ID, "--local", "--persist-to", edgeState];
  const wrangler = (args) => [WRANGLER, "kv", ...args, "--binding", "BENCH", "--local"];
  const wenv = { cwd: wranglerDir, env: { WRANGLER_SEND_METRICS: "false", CI: "1", NO_COLOR: "1" } };

  await measure(process.execPath, edge(["key", "put", "hello", "world"]));
  if (!SKIP_WRANGLER) await measure(process.execPath, wrangler(["key", "put", "hello", "world"]), wenv);

  const results = [];
  const getEdge = await series("edgecli kv key get --local", process.execPath, edge(["key", "get", "hello", "--text"]));
  if (getEdge.out !== "world\n") throw new Error(`edgecli returned ${JSON.stringify(getEdge.out)}`);
  const bulkEdge = await measure(process.execPath, edge(["bulk", "put", bulkFile]));
  let getWr, bulkWr;
  if (!SKIP_WRANGLER) {
    getWr = await series("wrangler 3 kv key get --local", process.execPath, wrangler(["key", "get", "hello", "--text"]), wenv);
    if (!getWr.out.includes("world")) throw new Error(`wrangler returned ${JSON.stringify(getWr.out)}`);
    bulkWr = await measure(process.execPath, wrangler(["bulk", "put", bulkFile]), wenv);
  }
  results.push(["key get (median of " + RUNS + ")", getEdge, getWr]);
  results.push(["bulk put, 10,000 entries", bulkEdge, bulkWr]);

  // One page by prefix from a namespace of MILLION keys, through the same store code the CLI and server use.
  const { openLocalKvStore } = await import(join(root, "dist", "kv", "cli", "local-backend.js"));
  const bigState = join(work, "million");
  const { store, close } = openLocalKvStore(bigState);
  const ns = (await store.createNamespace("bench", "million")).id;
  const fillStart = performance.now();
  const BATCH = 10_000;
  const value = Buffer.from("v");
  for (let i = 0; i < MILLION; i += BATCH) {
    const batch = [];
    for (let j = i; j < Math.min(MILLION, i + BATCH); j++)
      batch.push({ key: `user:${String(j % 1000).padStart(3, "0")}:${String(j).padStart(7, "0")}`, value });
    await store.putMany(ns, batch);
  }
  const fillMs = performance.now() - fillStart;
  const pageTimes = [];
  for (let i = 0; i < 50; i++) {
    const prefix = `user:${String((i * 37) % 1000).padStart(3, "0")}:`;
    const t = performance.now();
    const page = await store.list(ns, { prefix, limit: 1000 });
    pageTimes.push(performance.now() - t);
    if (page.keys.length !== Math.min(1000, MILLION / 1000)) throw new Error(`page of ${page.keys.length} keys for ${prefix}`);
  }
  // And a page that follows a cursor deep into the namespace.
  const first = await store.list(ns, { prefix: "user:999:", limit: 100 });
  const t2 = performance.now();
  await store.list(ns, { prefix: "user:999:", limit: 1000, cursor: first.cursor });
  const cursorMs = performance.now() - t2;
  close();

  console.log(`\nKV benchmark — ${new Date().toISOString()} — ${cpus().length} CPUs (${cpus()[0]?.model ?? "?"}), Node ${process.version}`);
  console.log(`NODE_EXTRA_CA_CERTS for both tools: ${childEnv.NODE_EXTRA_CA_CERTS ?? "(unset)"}\n`);
  const load = readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
  console.log(`load average at the end: ${load}\n`);
  console.log(
    "| operation | edgecli wall | wrangler 3.114 wall | wall speed-up | edgecli CPU | wrangler CPU | CPU ratio | edgecli peak RSS | wrangler peak RSS |",
  );
  console.log("|---|---|---|---|---|---|---|---|---|");
  const ratio = (a, b) => (b && Number.isFinite(a) && Number.isFinite(b) ? `${(a / b).toFixed(1)}×` : "-");
  for (const [name, e, w] of results) {
    console.log(
      `| ${name} | ${secs(e.ms)} | ${w ? secs(w.ms) : "-"} | ${ratio(w?.ms, e.ms)} | ${secs(e.cpu)} | ${w ? secs(w.cpu) : "-"} | ${ratio(w?.cpu, e.cpu)} | ${mib(e.peak)} | ${w ? mib(w.peak) : "-"} |`,
    );
  }
  console.log(`\n${MILLION.toLocaleString("en")} keys written in ${secs(fillMs)} (batches of ${BATCH}).`);
  console.log(
    `One page (1,000 keys) by prefix: median ${median(pageTimes).toFixed(2)} ms, max ${Math.max(...pageTimes).toFixed(2)} ms over 50 prefixes; a page after a cursor: ${cursorMs.toFixed(2)} ms.`,
  );
} finally {
  rmSync(work, { recursive: true, force: true });
}
