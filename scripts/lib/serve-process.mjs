// Runs `edgecli serve` (the built bin, dist/bin/edgecli.js) for scripts and benchmarks outside the test suite: on free
// ports, with known bootstrap credentials, its log in a file (as under a service manager: a pipe to a busy parent
// could fill, and the platform would then wait on its own log writes).
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { openSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { request } from "undici";
import { bootstrapEnv } from "../../dist/core/testing/platform.js";

export const EDGECLI = fileURLToPath(new URL("../../dist/bin/edgecli.js", import.meta.url));

/** Credentials the first start of a state directory bootstraps (later starts keep the stored ones). */
export function newCredentials() {
  return {
    accountId: randomBytes(16).toString("hex"),
    email: `bench-${randomBytes(3).toString("hex")}@example.com`,
    apiKey: randomBytes(19).toString("hex").slice(0, 37),
    token: randomBytes(30)
      .toString("base64url")
      .replace(/[^A-Za-z0-9]/g, "x")
      .slice(0, 40),
  };
}

/**
 * Starts `edgecli serve` on `stateDir` and resolves once it logs "platform ready". `logFile` is appended to (restarts
 * of one state directory share it). `nodeArgs` are options for the platform's node (e.g. --cpu-prof); `edgecli` another
 * build's bin (a benchmark comparing two versions).
 */
export async function startServe({ stateDir, creds, logFile = join(stateDir, "serve.log"), nodeArgs = [], args = [], edgecli = EDGECLI }) {
  const readyBefore = countReady(logFile);
  const child = spawn(
    process.execPath,
    [...nodeArgs, edgecli, "serve", "--port", "0", "--metrics-port", "0", "--dns-port", "0", "--state-dir", stateDir, ...args],
    {
      env: { ...process.env, ...bootstrapEnv(creds) },
      stdio: ["ignore", openSync(logFile, "a"), openSync(logFile, "a")],
    },
  );
  let endpoints;
  for (const deadline = Date.now() + 60_000; !endpoints; await new Promise((r) => setTimeout(r, 50))) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`edgecli serve did not start; see ${logFile}`);
    const ready = readyLines(logFile)[readyBefore];
    if (ready) endpoints = JSON.parse(ready).endpoints;
  }
  const apiUrl = `${endpoints.edge}/client/v4`;
  const headers = (extra = {}) => ({ authorization: `Bearer ${creds.token}`, ...extra });
  const exited = new Promise((r) => (child.exitCode !== null ? r() : child.once("exit", r)));
  return {
    url: endpoints.edge,
    apiUrl,
    endpoints,
    pid: child.pid,
    child,
    headers,
    exited,
    /** A v4 call with the bootstrap token; the parsed envelope. */
    async api(method, path, body) {
      const res = await request(apiUrl + path, {
        method,
        headers: headers(body === undefined ? {} : { "content-type": "application/json" }),
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.statusCode, body: await res.body.json() };
    },
    /** SIGTERM, and wait for the exit. */
    async stop() {
      child.kill("SIGTERM");
      await exited;
    },
    /** SIGKILL, and wait for the exit. */
    async kill() {
      child.kill("SIGKILL");
      await exited;
    },
  };
}

function readyLines(logFile) {
  try {
    return readFileSync(logFile, "utf8")
      .split("\n")
      .filter((l) => l.includes('"platform ready"'));
  } catch {
    return [];
  }
}

const countReady = (logFile) => readyLines(logFile).length;
