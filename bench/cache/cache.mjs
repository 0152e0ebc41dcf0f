// Cache HITs of a 1 KiB object side by side, wrk at 32 connections: the edge's cache (a proxied A record, the
// object cached), nginx proxy_cache, Varnish, and a bare Node http server answering a fixed 1 KiB body (the ceiling
// of any hit Node serves). Then a purge of one Cache-Tag among 100,000 cached objects through the v4 API (median of 20).
// Run as root (the origin listens on port 80): node bench/cache/cache.mjs [seconds] [connections]
// BENCH_PARTS=hit,big,purge (default all three) picks the parts; BENCH_ROUNDS=n runs the four HIT peers n times in
// turn, each round starting one further along (the ratios are the median of the rounds'); BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/p" profiles the edge.
// EDGE_CACHE_SENDFILE=0 (passed on to the edge) streams the 100 MiB HIT in JavaScript instead of with sendfile(2).
// BENCH_PORT_BASE=n (default 18190) moves the four listeners to n+1..n+4 and BENCH_ORIGIN the origin's address (default
// 127.0.0.142): bench/edge/big-transfer.mjs uses the same defaults, and another session may be running it.
// BENCH_COMPARE_CLI=<another build's dist/bin/edgecli.js> runs a second edge from that build (on n+5) in every round of
// the HIT, beside this one: a before/after of two builds under the same load (their CPU per request side by side; the
// two take turns going first). BENCH_PEERS=0 leaves nginx and Varnish out of the HIT's rounds.
import { execFileSync, spawn } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { startPlatform } from "../lib/platform.mjs";

const seconds = Number(process.argv[2] ?? 10);
const connections = Number(process.argv[3] ?? 32);
const ORIGIN = process.env.BENCH_ORIGIN ?? "127.0.0.142";
const base = Number(process.env.BENCH_PORT_BASE ?? 18190);
const [NGINX, VARNISH, BARE, EDGE, COMPARED] = [base + 1, base + 2, base + 3, base + 4, base + 5];
const compareCli = process.env.BENCH_COMPARE_CLI;
// BENCH_EDGE_ARGS="--edge-threads 2": more serve options for the edge; BENCH_COMPARE_ARGS: the second edge's (this
// build's, unless BENCH_COMPARE_CLI names another), so that two configurations run side by side in the same rounds.
const edgeArgs = process.env.BENCH_EDGE_ARGS ? process.env.BENCH_EDGE_ARGS.split(" ") : [];
const compareArgs = process.env.BENCH_COMPARE_ARGS ? process.env.BENCH_COMPARE_ARGS.split(" ") : undefined;
const dir = mkdtempSync(join(tmpdir(), "edge-cache-bench-"));
chmodSync(dir, 0o755);
const children = [];
const parts = new Set((process.env.BENCH_PARTS ?? "hit,big,purge").split(","));
const rounds = Number(process.env.BENCH_ROUNDS ?? 1);
// BENCH_PEERS=0: nginx and Varnish are left out of the HIT's rounds (a quicker A/B of two builds against bare Node).
const peers = process.env.BENCH_PEERS !== "0";
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

writeFileSync(join(dir, "1k.js"), Buffer.alloc(1024, 97));
writeFileSync(join(dir, "100m.bin"), Buffer.alloc(100 * 1024 * 1024, 98));
// nginx's temporary files in the bench's directory: another run (another user) may own /var/lib/nginx/proxy's.
// nginx with sendfile on, as Debian's nginx.conf ships it (its built-in default is off): the peer of the 100 MiB HIT is
// nginx as people run it. BENCH_NGINX_SENDFILE=off measures the built-in default.
writeFileSync(
  join(dir, "nginx.conf"),
  `worker_processes 1; pid ${dir}/nginx.pid; error_log ${dir}/nginx-error.log; daemon off;
events { worker_connections 4096; }
http { access_log off; sendfile ${process.env.BENCH_NGINX_SENDFILE === "off" ? "off" : "on"};
  proxy_cache_path ${dir}/nginx-cache keys_zone=c:10m;
  proxy_temp_path ${dir}/nginx-proxy-temp; client_body_temp_path ${dir}/nginx-body-temp;
  upstream origin { server ${ORIGIN}:80; keepalive 64; }
  server { listen ${ORIGIN}:80; root ${dir}; location / { add_header Cache-Control "max-age=3600"; } }
  server { listen 127.0.0.1:${NGINX}; location / { proxy_cache c; proxy_cache_valid 200 1h; proxy_pass http://origin; proxy_http_version 1.1; proxy_set_header Connection ""; } }
}`,
);
// The bare server runs with the options the edge's HTTP server has for safety (src/core/http/app.ts: the header size
// bound, the head's time limit and how often Node looks for it, no limit on a whole request, keep-alive 65 s), so the
// ratio compares what a HIT does, not server settings.
writeFileSync(
  join(dir, "bare.cjs"),
  `const body = Buffer.alloc(1024, 97);
const server = require("node:http").createServer({ maxHeaderSize: 32 * 1024, connectionsCheckingInterval: 16_500 }, (req, res) => { res.writeHead(200, { "content-type": "text/javascript", "content-length": 1024 }); res.end(body); });
server.keepAliveTimeout = 65_000;
server.headersTimeout = 66_000;
server.requestTimeout = 0;
server.listen(${BARE}, "127.0.0.1");`,
);

function start(cmd, args) {
  const c = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"] });
  children.push(c);
  c.stderr.on("data", (d) => process.env.BENCH_DEBUG && process.stderr.write(`[${cmd}] ${d}`));
  return c;
}

/** The user+system CPU time of a process so far, in µs (/proc/<pid>/stat's utime and stime, in clock ticks of 10 ms). */
function cpuMicros(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

/** A wrk run, and the server's CPU per request over it when its pid is given (load distorts this much less than req/s). */
function measured(url, host, pid) {
  const before = pid === undefined ? 0 : cpuMicros(pid);
  const result = wrk(url, host);
  if (pid !== undefined) result.cpuPerRequest = (cpuMicros(pid) - before) / Math.max(1, result.requests);
  return result;
}

function wrk(url, host) {
  const args = ["-t2", `-c${connections}`, `-d${seconds}s`, "--latency", url];
  if (host) args.push("-H", `Host: ${host}`);
  const out = execFileSync("wrk", args, { encoding: "utf8" });
  if (process.env.BENCH_DEBUG) console.error(out);
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0),
    requests: Number(/(\d+) requests in/.exec(out)?.[1] ?? 0),
    p50: /50%\s+([\d.]+\w+)/.exec(out)?.[1],
    non2xx: /Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? "0",
  };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

try {
  start("nginx", ["-c", join(dir, "nginx.conf")]);
  start("varnishd", ["-F", "-n", join(dir, "varnish"), "-a", `127.0.0.1:${VARNISH}`, "-b", `${ORIGIN}:80`, "-s", "malloc,64m"]);
  const bare = start(process.execPath, [join(dir, "bare.cjs")]);
  const state = join(dir, "state");
  const edge = await startPlatform({ port: EDGE, stateDir: state, children, args: edgeArgs });
  const { api } = edge;
  const zone = await edge.proxiedZone("bench-cache.example", ORIGIN);
  const compared =
    (compareCli || compareArgs) &&
    (await startPlatform({ port: COMPARED, stateDir: join(dir, "state-compared"), children, cliPath: compareCli ?? undefined, args: compareArgs ?? [] }));
  if (compared) await compared.proxiedZone("bench-cache.example", ORIGIN);
  console.log(
    `# ${new Date().toISOString()} ${cpus().length} × ${cpus()[0].model}, Node ${process.version}, load ${loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")}; a machine shared by 8 engineers building and testing (the numbers move with their work: compare ratios within a run)`,
  );
  // Warm every cache, and check the edge answers HIT (curl: fetch() does not send a Host of our choosing).
  const curl = (url, host) => execFileSync("curl", ["-s", "-o", "/dev/null", "-D", "-", ...(host ? ["-H", `Host: ${host}`] : []), url], { encoding: "utf8" });
  // The peers may start slowly on a loaded machine; one that never answers (a port taken by another session's bench?)
  // is named with its log.
  const answering = async (url, name, log) => {
    for (let i = 0; i < 60; i++) {
      try {
        return curl(url);
      } catch {
        await sleep(500);
      }
    }
    throw new Error(`${name} does not answer ${url}: ${log ? readFileSync(log, "utf8").slice(-2000) : ""}`);
  };
  await answering(`http://127.0.0.1:${NGINX}/1k.js`, "nginx", join(dir, "nginx-error.log"));
  if (parts.has("hit")) {
    await answering(`http://127.0.0.1:${VARNISH}/1k.js`, "varnish");
    await answering(`http://127.0.0.1:${BARE}/1k.js`, "the bare Node server");
    // Several times each: an edge with more than one loop keeps a cache per loop, each filled by its own first MISS.
    for (let i = 0; i < 8; i++) {
      curl(`http://127.0.0.1:${EDGE}/1k.js`, "www.bench-cache.example");
      if (compared) curl(`http://127.0.0.1:${COMPARED}/1k.js`, "www.bench-cache.example");
      curl(`http://127.0.0.1:${NGINX}/1k.js`);
      curl(`http://127.0.0.1:${VARNISH}/1k.js`);
    }
    const check = /cf-cache-status: (\w+)/i.exec(curl(`http://127.0.0.1:${EDGE}/1k.js`, "www.bench-cache.example"))?.[1];
    if (check !== "HIT") throw new Error(`the edge answered ${check}, not HIT`);
    if (compared && !/cf-cache-status: HIT/i.test(curl(`http://127.0.0.1:${COMPARED}/1k.js`, "www.bench-cache.example")))
      throw new Error("the compared build's edge does not answer HIT");
    console.log(`# wrk -t2 -c${connections} -d${seconds}s, 1 KiB GET, origin nginx on ${ORIGIN}:80, ${rounds} round(s) of the four in turn`);
    const all = [];
    for (let r = 0; r < rounds; r++) {
      // The two builds take turns going first (the first of a round meets the machine as the last one left it).
      const edges = () => {
        const thisEdge = () => measured(`http://127.0.0.1:${EDGE}/1k.js`, "www.bench-cache.example", edge.pid);
        const comparedEdge = () => measured(`http://127.0.0.1:${COMPARED}/1k.js`, "www.bench-cache.example", compared.pid);
        if (!compared) return { "edge cache HIT": thisEdge() };
        if (r % 2 === 0) {
          const first = thisEdge();
          return { "edge cache HIT": first, "compared build's edge HIT": comparedEdge() };
        }
        const first = comparedEdge();
        return { "edge cache HIT": thisEdge(), "compared build's edge HIT": first };
      };
      // The servers take turns going first, round by round (the edge went first in every round before 2026-12-07).
      const turns = [
        () => edges(),
        ...(peers
          ? [() => ({ "nginx proxy_cache": wrk(`http://127.0.0.1:${NGINX}/1k.js`) }), () => ({ varnish: wrk(`http://127.0.0.1:${VARNISH}/1k.js`) })]
          : []),
        () => ({ "bare node (fixed body)": measured(`http://127.0.0.1:${BARE}/1k.js`, undefined, bare.pid) }),
      ];
      const x = {};
      for (let i = 0; i < turns.length; i++) Object.assign(x, turns[(i + r) % turns.length]());
      all.push(x);
      const e = x["edge cache HIT"].rps;
      const c = x["compared build's edge HIT"];
      if (c)
        console.log(
          `round ${r + 1}, the compared build: ${c.rps.toFixed(0)} req/s, ${c.cpuPerRequest.toFixed(1)} µs CPU per request (this build / compared: req/s ${(e / c.rps).toFixed(2)}, CPU ${(x["edge cache HIT"].cpuPerRequest / c.cpuPerRequest).toFixed(2)})`,
        );
      console.log(
        `round ${r + 1} (load ${loadavg()[0].toFixed(1)}): ${Object.entries(x)
          .map(([k, v]) => `${k} ${v.rps.toFixed(0)} (p50 ${v.p50}${v.non2xx !== "0" ? `, non-2xx ${v.non2xx}` : ""})`)
          .join(
            ", ",
          )}; edge / bare node ${(e / x["bare node (fixed body)"].rps).toFixed(2)}; CPU per request: edge ${x["edge cache HIT"].cpuPerRequest.toFixed(1)} µs, bare node ${x["bare node (fixed body)"].cpuPerRequest.toFixed(1)} µs (bare / edge ${(x["bare node (fixed body)"].cpuPerRequest / x["edge cache HIT"].cpuPerRequest).toFixed(2)})${peers ? `, / nginx ${(e / x["nginx proxy_cache"].rps).toFixed(2)}, / varnish ${(e / x.varnish.rps).toFixed(2)}` : ""}`,
      );
    }
    const ratio = (peer) => median(all.map((x) => x["edge cache HIT"].rps / x[peer].rps)).toFixed(2);
    if (compared) {
      const vs = (f) => median(all.map((x) => f(x["edge cache HIT"]) / f(x["compared build's edge HIT"]))).toFixed(2);
      const cpu = (k) => median(all.map((x) => x[k].cpuPerRequest)).toFixed(1);
      console.log(
        `this build / the compared build, median of the rounds: req/s ${vs((v) => v.rps)}, CPU per request ${vs((v) => v.cpuPerRequest)} (${cpu("edge cache HIT")} vs ${cpu("compared build's edge HIT")} µs; bare node ${cpu("bare node (fixed body)")} µs)`,
      );
    }
    const cpuRatio = median(all.map((x) => x["bare node (fixed body)"].cpuPerRequest / x["edge cache HIT"].cpuPerRequest)).toFixed(2);
    console.log(
      `HIT, median of the rounds' ratios: edge / bare node ${ratio("bare node (fixed body)")}${peers ? `, edge / nginx ${ratio("nginx proxy_cache")}, edge / varnish ${ratio("varnish")}` : ""}; CPU per request, bare node / edge ${cpuRatio}`,
    );
  }

  if (parts.has("big")) {
    // A 100 MiB object, cached by the edge and nginx: MB/s of three downloads each (curl), and the edge's RSS.
    // Every edge download is checked to be a HIT (a MISS would measure the origin and the fill, not the cache).
    const download = (url, host) => {
      const out = execFileSync(
        "curl",
        ["-s", "-o", "/dev/null", "-w", "%{speed_download} %{size_download} %header{cf-cache-status}", ...(host ? ["-H", `Host: ${host}`] : []), url],
        { encoding: "utf8" },
      );
      const [speed, size, status] = out.trim().split(" ");
      if (Number(size) !== 100 * 1024 * 1024) throw new Error(`${url}: ${size} bytes`);
      if (host && status !== "HIT") throw new Error(`${url}: the edge answered ${status}, not HIT`);
      return Number(speed) / 1e6;
    };
    // Warm-up (the first edge download fills the cache: a MISS; the measured ones below must be HITs). With edge
    // threads each loop fills a cache of its own, and curl's connections go to any of them: more downloads.
    let afterFill = "";
    const threadsArg = edgeArgs[edgeArgs.indexOf("--edge-threads") + 1];
    const loops = !edgeArgs.includes("--edge-threads") ? 1 : threadsArg === "auto" ? cpus().length : Number(threadsArg);
    for (let i = 0; i < 2 + 4 * (loops - 1); i++) {
      curl(`http://127.0.0.1:${EDGE}/100m.bin`, "www.bench-cache.example");
      if (i === 0) {
        const st = readFileSync(`/proc/${edge.pid}/status`, "utf8");
        const mib = (name) => (Number(new RegExp(`${name}:\\s+(\\d+)`).exec(st)?.[1] ?? 0) / 1024).toFixed(0);
        afterFill = `after the fill: RSS ${mib("VmRSS")} MiB, peak ${mib("VmHWM")} MiB`;
      }
      download(`http://127.0.0.1:${NGINX}/100m.bin`);
    }
    // CPU time (user + system, every thread) of the edge process and of nginx's worker per 100 MiB HIT: on a shared
    // machine the MB/s move with everyone's load, the CPU a download costs much less.
    const ticks = (pid) => {
      const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
      return Number(f[11]) + Number(f[12]);
    };
    const nginxWorkers = () =>
      readdirSync("/proc")
        .filter((p) => /^\d+$/.test(p))
        .filter((p) => {
          try {
            return Number(readFileSync(`/proc/${p}/stat`, "utf8").split(") ")[1].split(" ")[1]) === children[0].pid;
          } catch {
            return false;
          }
        });
    // The peak RSS of the HITs alone: the fill's (the first download) is cleared from VmHWM first (Linux:
    // clear_refs 5 resets it to the current RSS).
    const status0 = readFileSync(`/proc/${edge.pid}/status`, "utf8");
    let fillPeak = "";
    try {
      fillPeak = `${(Number(/VmHWM:\s+(\d+)/.exec(status0)?.[1] ?? 0) / 1024).toFixed(0)} MiB`;
      writeFileSync(`/proc/${edge.pid}/clear_refs`, "5");
    } catch {
      fillPeak = "not reset";
    }
    const cpu = { edge: 0, nginx: 0 };
    const big = { edge: [], nginx: [] };
    for (let i = 0; i < 3; i++) {
      let t0 = ticks(edge.pid);
      big.edge.push(download(`http://127.0.0.1:${EDGE}/100m.bin`, "www.bench-cache.example"));
      cpu.edge += ticks(edge.pid) - t0;
      const workers = nginxWorkers();
      t0 = workers.reduce((a, p) => a + ticks(p), 0);
      big.nginx.push(download(`http://127.0.0.1:${NGINX}/100m.bin`));
      cpu.nginx += workers.reduce((a, p) => a + ticks(p), 0) - t0;
    }
    const status = readFileSync(`/proc/${edge.pid}/status`, "utf8");
    const kib = (name) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) / 1024;
    console.log(
      `100 MiB HIT: edge median ${median(big.edge).toFixed(0)} MB/s, nginx proxy_cache ${median(big.nginx).toFixed(0)} MB/s (${(median(big.edge) / median(big.nginx)).toFixed(2)}); edge RSS ${kib("VmRSS").toFixed(0)} MiB, peak during the HITs ${kib("VmHWM").toFixed(0)} MiB (before them, with the fill and a first HIT: ${fillPeak}; ${afterFill}); CPU per download: edge ${((cpu.edge * 10) / 3).toFixed(0)} ms, nginx ${((cpu.nginx * 10) / 3).toFixed(0)} ms; load ${loadavg()[0].toFixed(1)}`,
    );
  }

  if (parts.has("purge")) {
    // 100,000 objects seeded through the running node's index (written beside it, as fills would: 1,000 tags of 100
    // objects, each with a body file, so the purge has files to delete as a real one does).
    // With edge threads the objects are spread over the loops' shares (cache/threads/<i>), as fills spread them.
    const { DiskIndex } = await import("../../dist/edge/cache/disk-index.js");
    const threadsArg = edgeArgs[edgeArgs.indexOf("--edge-threads") + 1];
    const loops = !edgeArgs.includes("--edge-threads") ? 1 : threadsArg === "auto" ? cpus().length : Number(threadsArg);
    const shareDir = (loop) => (loop === 0 ? join(state, "cache") : join(state, "cache", "threads", String(loop)));
    const indexes = Array.from({ length: loops }, (_, loop) => new DiskIndex(join(shareDir(loop), "index.sqlite")));
    for (let loop = 0; loop < loops; loop++) mkdirSync(join(shareDir(loop), "objects", "zz"), { recursive: true });
    const now = Date.now();
    for (let b = 0; b < 100; b++)
      for (const [loop, index] of indexes.entries())
        index.transaction(() => {
          for (let i = b * 1000; i < (b + 1) * 1000; i++) {
            if (i % loops !== loop) continue;
            const objects = join(shareDir(loop), "objects", "zz");
            const url = `http://www.bench-cache.example/o/${i}.js`;
            // Files only for the tags purged below (4,000 files): the rest need none to be found by a purge.
            if (i % 1000 < 40) writeFileSync(join(objects, String(i)), "x".repeat(1024));
            index.put(
              {
                key: `${zone}\n${url}\n`,
                zoneId: zone,
                url,
                file: `zz/${i}`,
                size: 1024,
                status: 200,
                headers: [],
                storedAt: now,
                initialAge: 0,
                freshUntil: now + 3.6e6,
                staleWhileRevalidate: 0,
                staleIfError: 0,
              },
              [`tag-${i % 1000}`],
            );
          }
        });
    const total = indexes.reduce((n, index) => n + index.count(), 0);
    for (const index of indexes) index.close();
    // Twenty purges at the default plan's sustained rate (pro: 5 a second), so each one's deletions after its answer
    // are not charged to the next one's answer; then twenty back to back (the bucket's 25 at once), which are.
    const purgeTimes = async (from, gapMs) => {
      const times = [];
      for (let i = from; i < from + 20; i++) {
        if (gapMs) await sleep(gapMs);
        const t0 = performance.now();
        const r = await api("POST", `/zones/${zone}/purge_cache`, { tags: [`tag-${i}`] });
        times.push(performance.now() - t0);
        if (!r.success) throw new Error(JSON.stringify(r));
      }
      return times;
    };
    const times = await purgeTimes(0, 200);
    await sleep(5000);
    const burst = await purgeTimes(20, 0);
    const baseline = [];
    for (let i = 0; i < 20; i++) {
      const t0 = performance.now();
      await api("GET", `/zones/${zone}/settings/ssl`);
      baseline.push(performance.now() - t0);
    }
    const left = indexes.reduce((n, _, loop) => n + readdirSync(join(shareDir(loop), "objects", "zz")).length, 0);
    console.log(`for scale, GET /zones/{id}/settings/ssl (the API's own work): median ${median(baseline).toFixed(1)} ms`);
    console.log(
      `purge of one tag (100 objects) among ${total} objects via the API: median ${median(times).toFixed(1)} ms, max ${Math.max(...times).toFixed(1)} ms (20 purges 200 ms apart); back to back: median ${median(burst).toFixed(1)} ms, max ${Math.max(...burst).toFixed(1)} ms; load ${loadavg()[0].toFixed(1)}; body files left of the 4,000 purged: ${left}`,
    );
  }
} finally {
  for (const c of children) c.kill("SIGTERM");
  await sleep(500);
  rmSync(dir, { recursive: true, force: true });
}
