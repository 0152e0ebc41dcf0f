// Starts `edgecli serve` for a benchmark (one helper for bench/cache and bench/edge): the built CLI from dist/, no
// DNS listener, no metrics listener (--metrics-port 0: several sessions bench on one machine, and a fixed 9464 would
// collide), origins on loopback allowed, warnings only. Waits for the banner and answers its token, account and a
// small v4 API client.
import { spawn } from "node:child_process";
import { createWriteStream } from "node:fs";
import { request } from "node:http";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import { binNodeFlags } from "./bin-flags.mjs";

// BENCH_CLI: another build's edgecli.js (a before/after comparison of two builds in one sitting).
const cli = process.env.BENCH_CLI ?? fileURLToPath(new URL("../../dist/bin/edgecli.js", import.meta.url));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A free TCP port on loopback (for a listener the bench starts next). */
export const freePort = () =>
  new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = s.address().port;
      s.close(() => resolve(port));
    });
  });

/**
 * Node's arguments for `edgecli serve` as the benches start it: the bin's Node flags (BENCH_NODE_ARGS and `nodeArgs`
 * after them, so they win), no DNS or metrics listener unless asked, origins on loopback allowed, warnings only.
 */
export function serveArgs({ cliPath = cli, port, stateDir, args = [], nodeArgs = [], metricsPort = 0, dnsPort = 0 }) {
  return [
    // As `edgecli serve` starts Node (the bin's flags); BENCH_NODE_ARGS and nodeArgs come after, so they win.
    ...binNodeFlags(cliPath),
    ...(process.env.BENCH_NODE_ARGS ? process.env.BENCH_NODE_ARGS.split(" ") : []),
    ...nodeArgs,
    cliPath,
    "serve",
    "--port",
    String(port),
    ...(dnsPort === 0 ? ["--dns-port", "0", "--dns-workers", "0"] : ["--dns-port", String(dnsPort)]),
    "--metrics-port",
    String(metricsPort),
    "--state-dir",
    stateDir,
    "--origin-allow",
    "127.0.0.0/8",
    "--log-level",
    "warn",
    ...args,
  ];
}

/**
 * `port`: the edge's port (API and proxied traffic); `stateDir`: a fresh directory; `args`: more serve options;
 * `children`: the bench's list of processes it stops at the end (the platform is added to it); `cliPath`: another build's
 * edgecli.js than BENCH_CLI's (a bench running two builds side by side), or dist/cli.js (the unbundled build, whose
 * profiles name functions by their module); `dnsPort`: a DNS listener with the default answering processes (0: none).
 */
export async function startPlatform({
  port,
  stateDir,
  args = [],
  children,
  env = {},
  nodeArgs = [],
  metricsPort = 0,
  dnsPort = 0,
  cliPath = cli,
  waitSeconds = 180,
}) {
  const edge = spawn(process.execPath, serveArgs({ cliPath, port, stateDir, args, nodeArgs, metricsPort, dnsPort }), {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, ...env },
  });
  children?.push(edge);
  // BENCH_STDOUT: a file for the platform's standard output (V8's --trace-* flags write there); read either way, so a
  // full pipe never stalls the platform.
  if (process.env.BENCH_STDOUT) edge.stdout.pipe(createWriteStream(process.env.BENCH_STDOUT));
  else edge.stdout.resume();
  let banner = "";
  edge.stderr.on("data", (d) => {
    banner += d;
    if (process.env.BENCH_DEBUG) process.stderr.write(`[edgecli] ${d}`);
  });
  let exited;
  edge.once("exit", (code) => (exited = code));
  for (let i = 0; i < waitSeconds * 5 && !/API token/.test(banner) && exited === undefined; i++) await sleep(200);
  if (!/API token/.test(banner)) throw new Error(`the platform did not start (exit ${exited}): ${banner}`);
  const token = /API token\s+(\S+)/.exec(banner)[1];
  const account = /account id\s+(\S+)/.exec(banner)[1];
  /** A v4 API call on a new connection each time (a kept-alive one may have been closed meanwhile); answers the envelope. */
  const api = (method, path, body) =>
    new Promise((resolve, reject) => {
      const req = request(
        `http://127.0.0.1:${port}/client/v4${path}`,
        { method, agent: false, headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) } },
        (res) => {
          let text = "";
          res.on("data", (d) => (text += d));
          res.on("end", () => {
            try {
              resolve({ status: res.statusCode, ...JSON.parse(text) });
            } catch (err) {
              reject(new Error(`${method} ${path}: ${res.statusCode} ${text.slice(0, 200)}`, { cause: err }));
            }
          });
        },
      );
      req.once("error", reject);
      req.end(body === undefined ? undefined : JSON.stringify(body));
    });
  /** A zone of the bench's account with a proxied A record `www` to `origin`. */
  const proxiedZone = async (name, origin) => {
    const zone = await api("POST", "/zones", { name, account: { id: account } });
    if (!zone.success) throw new Error(`zone ${name}: ${JSON.stringify(zone.errors)}`);
    const record = await api("POST", `/zones/${zone.result.id}/dns_records`, { type: "A", name: "www", content: origin, proxied: true });
    if (!record.success) throw new Error(`record of ${name}: ${JSON.stringify(record.errors)}`);
    await sleep(1000);
    return zone.result.id;
  };
  return { process: edge, pid: edge.pid, token, account, api, proxiedZone };
}
