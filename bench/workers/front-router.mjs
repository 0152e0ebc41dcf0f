// workerd in front of everything, measured (issue 16, "The edge in front of workerd"): what a router Worker owning the
// edge socket would give worker traffic, and what it would cost the rest (the API, the AI gateway, S3, the dashboard),
// against the platform's Node edge of today, in one run with the cases taking turns in rounds.
//
// Processes: the platform (`edgecli serve`, two Workers deployed: one answering 1 KiB, one doing env.BUCKET.get of 1 KiB);
// a "front" workerd (the pinned npm `workerd`) running the same two Workers, a router Worker, and external services to
// a plain Node HTTP server (the stand-in for the API/gateway) and to the platform's own workerd of each script; and that
// Node server. Paths, per Worker and client count:
//   a  front direct      the Worker on its own socket of the front workerd (TCP): the ceiling of a design with workerd in front
//   b  router            the router socket, Host <w>.workers.localhost: router Worker → service binding, same process
//   b2 router → process  the router socket, Host far-<w>.workers.localhost: router Worker → external service → the
//                        platform's workerd of the script (unix socket): the router with one workerd per script, as today
//   p  platform direct   the platform's workerd of the script on its unix socket: the issue's ceiling
//   c  edge              the platform's edge port today (Node proxy → the script's workerd)
// and for non-worker traffic: d-direct (the Node server asked directly, TCP) and d-router (through the router Worker's
// external service). After the rounds: what a router Worker sees of the client address, 64 MiB each way and a
// WebSocket echo to Node through the router, and the listening socket surviving workerd restarts (`--socket-fd`).
// Run after `npm run build`: node bench/workers/front-router.mjs
// Env: BENCH_SECONDS (per case, default 3), BENCH_ROUNDS (default 3), BENCH_CLIENTS (default 1,8), ONLY (regexp on the
// case key), BIG_MIB (default 64), SWAPS (workerd restarts under load, default 5).
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { startTestPlatform } from "../../dist/core/testing/platform.js";
import { capnpString } from "../../dist/workers/runtime/capnp-string.js";
import { defaultWorkerdPath } from "../../dist/workers/runtime/workerd-binary.js";
import { cpuOf, timedLoops } from "./loops.mjs";
import { EDGE_BENCH_WORKERS as WORKERS, scriptInfo, uploadWorker } from "./upload.mjs";
import { Pool, request } from "../../node_modules/undici/index.js";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CLIENTS = (process.env.BENCH_CLIENTS ?? "1,8").split(",").map(Number);
const ONLY = process.env.ONLY ? new RegExp(process.env.ONLY) : undefined;
const BIG = Number(process.env.BIG_MIB ?? 64) * 1024 * 1024;
const SWAPS = Number(process.env.SWAPS ?? 5);
const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const WS_PATH = createRequire(join(ROOT, "package.json")).resolve("ws");
const SMALL = "x".repeat(1024);

// The router: a worker Host goes to that script's service binding, with cf-connecting-ip set from the peer address workerd
// reports (request.cf.clientIp) and a client's own replaced, as the Node edge does; everything else goes to the Node
// platform (the same header, so the API could still log and limit by client).
const ROUTER = `const SUFFIX = ".workers.localhost";
const ROUTES = new Map([["plain", "PLAIN"], ["get", "GET"], ["far-plain", "FAR_PLAIN"], ["far-get", "FAR_GET"]]);
function withClientIp(req) {
  const headers = new Headers(req.headers);
  // workerd reports the peer as "address:port" ("[v6]:port").
  const ip = (req.cf?.clientIp ?? "").replace(/^\\[?(.*?)\\]?:\\d+$/, "$1");
  headers.set("cf-connecting-ip", ip);
  return new Request(req, { headers });
}
export default { async fetch(req, env) {
  const url = new URL(req.url);
  if (url.pathname === "/__cf") return Response.json({ cf: req.cf ?? null, headers: [...req.headers] });
  const host = (req.headers.get("host") ?? "").replace(/:\\d+$/, "").toLowerCase();
  // "raw-" Hosts: the same routes with the request passed on untouched (no client address): the least a router Worker costs.
  const raw = host.startsWith("raw-");
  const name = raw ? host.slice(4) : host;
  if (name.endsWith(SUFFIX)) {
    const binding = ROUTES.get(name.slice(0, -SUFFIX.length));
    if (!binding) return new Response("No worker is deployed there\\n", { status: 404 });
    return env[binding].fetch(raw ? req : withClientIp(req));
  }
  return env.NODE.fetch(raw ? req : withClientIp(req));
} };`;

// The stand-in for the Node platform behind the router: a small JSON answer, 64 MiB each way, a WebSocket echo.
const JSON_BODY = JSON.stringify({
  success: true,
  errors: [],
  messages: [],
  result: { id: "0123456789abcdef0123456789abcdef", name: "bench", created_on: "2026-11-24T00:00:00Z" },
});
const NODE_SERVER = `const http = require("node:http");
const { WebSocketServer } = require(${JSON.stringify(WS_PATH)});
const body = ${JSON.stringify(JSON_BODY)};
const chunk = Buffer.alloc(1 << 20, 7);
const s = http.createServer((req, res) => {
  if (req.url === "/big" && req.method === "PUT") {
    let n = 0;
    req.on("data", (c) => (n += c.length));
    req.on("end", () => res.end(JSON.stringify({ bytes: n })));
    return;
  }
  if (req.url.startsWith("/big?")) {
    let left = Number(req.url.slice(5));
    res.writeHead(200, { "content-length": left });
    const more = () => { while (left > 0) { const c = chunk.subarray(0, Math.min(chunk.length, left)); left -= c.length; if (!res.write(c)) return res.once("drain", more); } res.end(); };
    return more();
  }
  if (req.url === "/ip") return res.end(JSON.stringify({ peer: req.socket.remoteAddress, cfConnectingIp: req.headers["cf-connecting-ip"] ?? null }));
  res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) }).end(body);
});
new WebSocketServer({ server: s }).on("connection", (ws) => ws.on("message", (m, binary) => ws.send(m, { binary })));
s.keepAliveTimeout = 30000;
s.listen(0, "127.0.0.1", () => console.log(s.address().port));`;

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(" ");

/** Starts workerd on `config` (its sockets' addresses in the config); resolves with the child and each socket's port. */
async function startWorkerd(config, dir, socketNames, extraArgs = []) {
  const file = join(dir, `config-${Date.now()}.capnp`);
  writeFileSync(file, config);
  const child = spawn(defaultWorkerdPath(), ["serve", file, "--control-fd=3", ...extraArgs], { stdio: ["ignore", "inherit", "inherit", "pipe"] });
  const ports = {};
  const waiting = new Set(socketNames);
  await new Promise((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`workerd exited (${code})`)));
    createInterface({ input: child.stdio[3] }).on("line", (line) => {
      const ev = JSON.parse(line);
      if (ev.event !== "listen") return;
      ports[ev.socket] = ev.port;
      waiting.delete(ev.socket);
      if (waiting.size === 0) resolve();
    });
  });
  return { child, ports };
}

/** The front workerd's config: the two Workers (each on its own socket), the router (its socket), external services. */
function frontConfig({ backend, far, nodePort }) {
  const worker = (name, extra = "") => `const ${name} :Workerd.Worker = (
  modules = [(name = "w.js", esModule = ${capnpString(name === "router" ? ROUTER : WORKERS[name].code)})],
  compatibilityDate = "2024-09-01",${extra}
);`;
  const external = (name, address, headers = "") => `(name = "${name}", external = (address = ${capnpString(address)}, http = (${headers})))`;
  return `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [
    (name = "plain", worker = .plain),
    (name = "get", worker = .get),
    (name = "router", worker = .router),
    ${external("r2", `unix:${backend.socket.socketPath}`, `injectRequestHeaders = [(name = ${capnpString(backend.header)}, value = ${capnpString(backend.value)})]`)},
    ${external("node", `127.0.0.1:${nodePort}`)},
    ${external("far-plain", `unix:${far.plain}`)},
    ${external("far-get", `unix:${far.get}`)},
  ],
  sockets = [
    (name = "plain", address = "127.0.0.1:0", http = (), service = "plain"),
    (name = "get", address = "127.0.0.1:0", http = (), service = "get"),
    (name = "router", address = "127.0.0.1:0", http = (), service = "router"),
  ],
);
${worker("plain")}
${worker("get", `\n  bindings = [(name = "BUCKET", r2Bucket = "r2")],`)}
${worker(
  "router",
  `\n  bindings = [(name = "PLAIN", service = "plain"), (name = "GET", service = "get"), (name = "FAR_PLAIN", service = "far-plain"), (name = "FAR_GET", service = "far-get"), (name = "NODE", service = "node")],`,
)}
`;
}

/** req/s and CPU µs per request of each process in `pids` for `clients` keep-alive loops of SECONDS. */
async function measure(k) {
  const pool = k.socketPath
    ? new Pool("http://localhost", { connections: k.c, socketPath: k.socketPath })
    : new Pool(`http://127.0.0.1:${k.port}`, { connections: k.c });
  const once = async () => {
    const r = await pool.request({ path: "/", method: "GET", headers: k.headers ?? {} });
    const b = await r.body.text();
    if (r.statusCode !== 200 || b.length !== k.expect) throw new Error(`${k.key}: bad answer ${r.statusCode} ${b.slice(0, 100)}`);
  };
  let cpu0 = {};
  const { n, secs } = await timedLoops(once, k.c, SECONDS, () => (cpu0 = Object.fromEntries(Object.entries(pids).map(([p, pid]) => [p, cpuOf(pid)]))));
  const cpu = Object.fromEntries(Object.entries(pids).map(([p, pid]) => [p, (cpuOf(pid) - cpu0[p]) / n]));
  await pool.close();
  return { rps: n / secs, cpu };
}

const pids = {};
const children = [];
const dir = mkdtempSync(join(tmpdir(), "front-router-"));
console.log(`${new Date().toISOString()} load ${load()}; ${ROUNDS} rounds of ${SECONDS} s; workerd ${defaultWorkerdPath()}`);
const p = await startTestPlatform({ args: ["--dns-port", "0"] });
try {
  const created = await p.api("POST", `/accounts/${p.accountId}/r2/buckets`, { name: "bench" });
  if (created.status !== 200) throw new Error(JSON.stringify(created.body));
  const seed = await request(`${p.apiUrl}/accounts/${p.accountId}/r2/buckets/bench/objects/small`, { method: "PUT", body: SMALL, headers: p.headers() });
  await seed.body.text();
  for (const [w, { code, bindings }] of Object.entries(WORKERS)) await uploadWorker(p, `fr-${w}`, code, bindings);
  const edgePort = new URL(p.url).port;
  const info = {};
  for (const w of Object.keys(WORKERS)) {
    // Asked once through the edge first: the live-version log line that scriptInfo reads may come just after the upload.
    const r = await request(`http://127.0.0.1:${edgePort}/`, { headers: { host: `fr-${w}.workers.localhost` } });
    if ((await r.body.text()).length !== SMALL.length) throw new Error(`fr-${w} did not answer through the edge`);
    for (let tries = 0; !info[w]; tries++) {
      try {
        info[w] = scriptInfo(p, `fr-${w}`);
      } catch (e) {
        if (tries > 100) throw e;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }

  const nodeServer = spawn(process.execPath, ["-e", NODE_SERVER], { stdio: ["ignore", "pipe", "inherit"] });
  children.push(nodeServer);
  const nodePort = Number(String((await once(nodeServer.stdout, "data"))[0]).trim());

  // The front workerd's R2 binding calls the platform's binding backend for the same bucket, with the header the
  // platform's own workerd of fr-get sends (the bench's only shortcut: a real design would mint its own).
  const front = await startWorkerd(
    frontConfig({ backend: info.get.backend, far: { plain: info.plain.socket.socketPath, get: info.get.socket.socketPath }, nodePort }),
    dir,
    ["plain", "get", "router"],
  );
  children.push(front.child);
  Object.assign(pids, { platform: p.process.pid, workerdPlain: info.plain.pid, workerdGet: info.get.pid, front: front.child.pid, node: nodeServer.pid });
  const routerPort = front.ports.router;

  // What a router Worker knows of the client, and whether it reaches Node.
  const seen = await (await request(`http://127.0.0.1:${routerPort}/__cf`, { headers: { "cf-connecting-ip": "6.6.6.6" } })).body.json();
  console.log(
    `router Worker sees: request.cf = ${JSON.stringify(seen.cf)}; a client's own cf-connecting-ip arrives as ${JSON.stringify(seen.headers.find(([h]) => h === "cf-connecting-ip"))}`,
  );
  const ipAtNode = await (
    await request(`http://127.0.0.1:${routerPort}/ip`, { headers: { host: "api.localhost", "cf-connecting-ip": "6.6.6.6" } })
  ).body.json();
  console.log(`Node behind the router sees: ${JSON.stringify(ipAtNode)}`);

  const cases = [];
  for (const w of Object.keys(WORKERS))
    for (const c of CLIENTS) {
      const at = (route, extra) => cases.push({ key: `${w} c=${c} ${route}`, c, expect: SMALL.length, ...extra });
      at("a-front-direct", { port: front.ports[w] });
      at("b-router", { port: routerPort, headers: { host: `${w}.workers.localhost` } });
      at("b0-router-raw", { port: routerPort, headers: { host: `raw-${w}.workers.localhost` } });
      at("b2-router-far", { port: routerPort, headers: { host: `far-${w}.workers.localhost` } });
      at("p-platform-direct", { socketPath: info[w].socket.socketPath });
      at("c-edge", { port: edgePort, headers: { host: `fr-${w}.workers.localhost:${edgePort}` } });
    }
  for (const c of CLIENTS) {
    const at = (route, extra) => cases.push({ key: `json c=${c} ${route}`, c, expect: JSON_BODY.length, ...extra });
    at("d-direct", { port: nodePort });
    at("d-router", { port: routerPort, headers: { host: "api.localhost" } });
    at("d0-router-raw", { port: routerPort, headers: { host: "raw-api.localhost" } });
  }
  const chosen = cases.filter((k) => !ONLY || ONLY.test(k.key));
  for (const k of chosen) k.runs = [];
  for (let r = 0; r < ROUNDS; r++) {
    const order = chosen.map((_, i) => chosen[(i + r * 5) % chosen.length]);
    for (const k of order) k.runs.push(await measure(k));
    console.log(`round ${r + 1} done, load ${load()}`);
  }
  const byKey = new Map(chosen.map((k) => [k.key, k]));
  const rps = (k) => median(k.runs.map((x) => x.rps));
  const cpuLine = (k) =>
    Object.keys(pids)
      .map((proc) => `${proc} ${median(k.runs.map((x) => x.cpu[proc])).toFixed(0)}`)
      .join(", ");
  console.log("\nmedians (req/s), CPU µs per request of each process:");
  for (const k of chosen) console.log(`${k.key.padEnd(28)} ${rps(k).toFixed(0).padStart(6)}   ${cpuLine(k)}`);
  const ratio = (a, b) => {
    const ka = byKey.get(a);
    const kb = byKey.get(b);
    if (!ka || !kb) return "";
    const rounds = ka.runs.map((x, i) => (x.rps / kb.runs[i].rps).toFixed(2)).join(" ");
    return `${(rps(ka) / rps(kb)).toFixed(2)} (rounds ${rounds})`;
  };
  console.log("\nratios (median / median, and per round):");
  for (const w of Object.keys(WORKERS))
    for (const c of CLIENTS) {
      const key = (path) => `${w} c=${c} ${path}`;
      console.log(`${w} c=${c}: router/front-direct ${ratio(key("b-router"), key("a-front-direct"))}`);
      console.log(`${w} c=${c}: raw router/front-direct ${ratio(key("b0-router-raw"), key("a-front-direct"))}`);
      console.log(`${w} c=${c}: router→process/platform-direct ${ratio(key("b2-router-far"), key("p-platform-direct"))}`);
      console.log(`${w} c=${c}: edge/platform-direct ${ratio(key("c-edge"), key("p-platform-direct"))}`);
      console.log(`${w} c=${c}: router/edge ${ratio(key("b-router"), key("c-edge"))}`);
    }
  for (const c of CLIENTS) {
    console.log(`json c=${c}: router/direct ${ratio(`json c=${c} d-router`, `json c=${c} d-direct`)}`);
    console.log(`json c=${c}: raw router/direct ${ratio(`json c=${c} d0-router-raw`, `json c=${c} d-direct`)}`);
  }
  console.log(`end of rounds, load ${load()}`);

  // Large bodies and a WebSocket, Node direct and through the router.
  const frontRss = () => {
    const status = readFileSync(`/proc/${front.child.pid}/status`, "utf8");
    const mib = (k) => (Number(status.match(new RegExp(`${k}:\\s+(\\d+)`))[1]) / 1024).toFixed(0);
    return `RSS ${mib("VmRSS")} MiB, peak ${mib("VmHWM")} MiB`;
  };
  if (!ONLY || ONLY.test("big")) {
    console.log(`front workerd before the large bodies: ${frontRss()}`);
    for (const [label, port, headers] of [
      ["direct", nodePort, {}],
      ["router", routerPort, { host: "api.localhost" }],
    ]) {
      const chunk = Buffer.alloc(1024 * 1024, 7);
      const body = (async function* () {
        for (let sent = 0; sent < BIG; sent += chunk.length) yield chunk;
      })();
      let t = performance.now();
      const put = await request(`http://127.0.0.1:${port}/big`, { method: "PUT", body, headers: { ...headers, "content-length": String(BIG) } });
      const putBytes = (await put.body.json()).bytes;
      const putSecs = (performance.now() - t) / 1000;
      t = performance.now();
      const get = await request(`http://127.0.0.1:${port}/big?${BIG}`, { headers });
      let got = 0;
      for await (const c of get.body) got += c.length;
      const getSecs = (performance.now() - t) / 1000;
      const mib = BIG / 1024 / 1024;
      console.log(
        `${mib} MiB to Node ${label}: PUT ${(mib / putSecs).toFixed(0)} MiB/s (${putBytes === BIG ? "all bytes" : `${putBytes} bytes!`}), GET ${(mib / getSecs).toFixed(0)} MiB/s (${got === BIG ? "all bytes" : `${got} bytes!`}); front workerd ${frontRss()}`,
      );
    }
    const { default: WebSocket } = await import(WS_PATH);
    for (const [label, port, headers] of [
      ["direct", nodePort, {}],
      ["router", routerPort, { host: "api.localhost" }],
    ]) {
      const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`, { headers });
      await once(ws, "open");
      let n = 0;
      const echo = async () => {
        ws.send(`ping ${n}`);
        const [m] = await once(ws, "message");
        if (String(m) !== `ping ${n}`) throw new Error(`ws ${label}: echo ${m}`);
        n++;
      };
      for (let warm = performance.now() + 300; performance.now() < warm;) await echo();
      n = 0;
      const end = performance.now() + 2000;
      while (performance.now() < end) await echo();
      ws.close();
      console.log(`WebSocket echo to Node ${label}: ${(n / 2).toFixed(0)} round trips/s`);
    }
  }

  // The listening socket across restarts: a holder process (python here; a platform would need a native helper, since
  // a Node net.Server accepts on any socket it listens on) keeps it and starts each new workerd with --socket-fd; the old
  // one gets SIGTERM once the new one is up. Clients keep hammering; every failed request is counted.
  if (SWAPS > 0 && (!ONLY || ONLY.test("swap"))) await swapUnderLoad(dir);
} finally {
  for (const c of children) c.kill();
  await p.dispose();
  rmSync(dir, { recursive: true, force: true });
}

async function swapUnderLoad(dir) {
  const config = `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [(name = "w", worker = (modules = [(name = "w.js", esModule = ${capnpString(WORKERS.plain.code)})], compatibilityDate = "2024-09-01"))],
  sockets = [(name = "edge", http = (), service = "w")],
);`;
  const file = join(dir, "swap.capnp");
  writeFileSync(file, config);
  const holder = spawn(
    "python3",
    [
      "-c",
      `import os, socket, subprocess, sys
s = socket.create_server(("127.0.0.1", 0)); s.set_inheritable(True)
print(s.getsockname()[1], flush=True)
def start():
    r, w = os.pipe()
    p = subprocess.Popen([sys.argv[1], "serve", sys.argv[2], "--socket-fd", "edge=%d" % s.fileno(), "--control-fd", str(w)], pass_fds=[s.fileno(), w])
    os.close(w)
    with os.fdopen(r) as control:
        for line in control:
            if '"listen"' in line: break
    return p
cur = start()
print("up", flush=True)
for line in sys.stdin:
    new = start(); cur.terminate(); cur.wait(); cur = new
    print("swapped", flush=True)
cur.terminate(); cur.wait()`,
      defaultWorkerdPath(),
      file,
    ],
    { stdio: ["pipe", "pipe", "inherit"] },
  );
  const lines = createInterface({ input: holder.stdout })[Symbol.asyncIterator]();
  const port = Number((await lines.next()).value);
  await lines.next();
  const pool = new Pool(`http://127.0.0.1:${port}`, { connections: 8 });
  let ok = 0;
  const errors = new Map();
  let stop = false;
  const loop = async () => {
    while (!stop) {
      try {
        const r = await pool.request({ path: "/", method: "GET" });
        const b = await r.body.text();
        if (r.statusCode === 200 && b.length === SMALL.length) ok++;
        else errors.set(`status ${r.statusCode}`, (errors.get(`status ${r.statusCode}`) ?? 0) + 1);
      } catch (e) {
        const why = e.code ?? e.message;
        errors.set(why, (errors.get(why) ?? 0) + 1);
      }
    }
  };
  const loops = Array.from({ length: 8 }, loop);
  const t0 = performance.now();
  for (let i = 0; i < SWAPS; i++) {
    await new Promise((r) => setTimeout(r, 500));
    holder.stdin.write("swap\n");
    await lines.next();
  }
  await new Promise((r) => setTimeout(r, 500));
  stop = true;
  await Promise.all(loops);
  const secs = (performance.now() - t0) / 1000;
  await pool.close();
  holder.stdin.end();
  await once(holder, "exit");
  console.log(
    `listening socket kept across ${SWAPS} workerd restarts (--socket-fd), 8 clients, ${secs.toFixed(1)} s: ${ok} answered, failed: ${errors.size ? JSON.stringify(Object.fromEntries(errors)) : "none"}`,
  );
}
