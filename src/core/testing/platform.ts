import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const START_LIMIT_MS = 120_000;

/** The bundled CLI, the file the package's `edgecli` bin points at. */
export const CLI_PATH = fileURLToPath(new URL("../../bin/edgecli.js", import.meta.url));

/**
 * The Node flags the bin starts Node with (its `#!/usr/bin/env -S node …` line). Tests start it through
 * `process.execPath` (the Node under test, which may not be the one on PATH), so they pass them too: the platform
 * runs as `edgecli serve` runs it, and V8 accepts the bin's code cache (made under these flags).
 */
export const BIN_NODE_FLAGS: readonly string[] = (/^#!\/usr\/bin\/env -S node((?: \S+)*)\s*$/.exec(readFileSync(CLI_PATH, "utf8").split("\n", 1)[0])?.[1] ?? "")
  .split(" ")
  .filter(Boolean);

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
  stdoutBytes: Buffer;
}

export interface TestPlatformOptions {
  /** Reuse a state directory (e.g. to test a restart); a fresh temporary one otherwise. */
  stateDir?: string;
  /** Extra `edgecli serve` arguments, e.g. ["--dns-port", "0"]. */
  args?: string[];
  env?: NodeJS.ProcessEnv;
  /** Options for the platform's Node process (e.g. --cpu-prof, which NODE_OPTIONS does not accept). */
  nodeArgs?: string[];
  /** The bootstrap credentials (nodes sharing one database start with the same); random ones otherwise. */
  credentials?: TestCredentials;
}

export interface TestCredentials {
  accountId: string;
  email: string;
  apiKey: string;
  token: string;
}

export interface TestPlatform extends TestCredentials {
  url: string;
  apiUrl: string;
  stateDir: string;
  /** Addresses the platform reported when ready (edge, api, dns_udp, …). */
  endpoints: Record<string, string>;
  /** Everything the server wrote to stdout and stderr so far. */
  output(): string;
  /** Only the structured log lines (stdout), without the start banner. */
  logs(): string;
  /** Authorization headers for the bootstrap token. */
  headers(extra?: Record<string, string>): Record<string, string>;
  /**
   * Headers for the bootstrap user's global key (with an empty Authorization, so `api` does not send the token).
   * The key reaches every account of the user, also ones created later; the bootstrap token reaches only the first.
   */
  keyHeaders(extra?: Record<string, string>): Record<string, string>;
  /** Sends a v4 API request with the bootstrap token and returns status and parsed JSON. */
  api<T = any>(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<{ status: number; body: T }>;
  /** Runs the real `edgecli` binary against this platform. */
  cli(args: string[], opts?: { input?: string | Buffer; env?: NodeJS.ProcessEnv; cwd?: string }): Promise<CliResult>;
  /** SIGTERM and wait; the state directory is kept. */
  stop(): Promise<void>;
  /** Stops and removes the state directory (unless it was given). */
  dispose(): Promise<void>;
  process: ChildProcess;
}

const alnum = (n: number) =>
  randomBytes(n * 2)
    .toString("base64")
    .replace(/[^A-Za-z0-9]/g, "")
    .slice(0, n)
    .padEnd(n, "x");

/** Random bootstrap credentials in the formats the platform accepts. */
export function newTestCredentials(): TestCredentials {
  return {
    accountId: randomBytes(16).toString("hex"),
    email: `test-${randomBytes(3).toString("hex")}@example.com`,
    apiKey: randomBytes(19).toString("hex").slice(0, 37),
    token: alnum(40),
  };
}

/** The environment that makes the first start of a state directory bootstrap exactly these credentials. */
export function bootstrapEnv(creds: TestCredentials): NodeJS.ProcessEnv {
  return {
    EDGE_BOOTSTRAP_ACCOUNT_ID: creds.accountId,
    EDGE_BOOTSTRAP_EMAIL: creds.email,
    EDGE_BOOTSTRAP_API_KEY: creds.apiKey,
    EDGE_BOOTSTRAP_API_TOKEN: creds.token,
  };
}

/** Runs `edgecli` as a child process and collects its output. */
export function runCli(args: string[], opts: { input?: string | Buffer; env?: NodeJS.ProcessEnv; cwd?: string } = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...BIN_NODE_FLAGS, CLI_PATH, ...args], {
      cwd: opts.cwd,
      env: { ...process.env, NO_COLOR: "1", ...opts.env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on("data", (d: Buffer) => out.push(d));
    child.stderr.on("data", (d: Buffer) => err.push(d));
    child.on("error", reject);
    child.on("close", (code) => {
      const stdoutBytes = Buffer.concat(out);
      resolve({ code: code ?? 1, stdout: stdoutBytes.toString("utf8"), stderr: Buffer.concat(err).toString("utf8"), stdoutBytes });
    });
    // A command that reads no input may exit before its (empty) input is written: that EPIPE is not the command's
    // failure (its exit code and output say how it ended), and unhandled it failed the test (seen under load).
    child.stdin.on("error", (e: NodeJS.ErrnoException) => {
      if (e.code !== "EPIPE") reject(e);
    });
    child.stdin.end(opts.input ?? "");
  });
}

/**
 * Starts the real platform (`edgecli serve`) on free ports with a temporary state directory and
 * known bootstrap credentials, and waits until it reports ready.
 */
export async function startTestPlatform(opts: TestPlatformOptions = {}): Promise<TestPlatform> {
  const stateDir = opts.stateDir ?? mkdtempSync(join(tmpdir(), "edge-test-"));
  const creds = opts.credentials ?? newTestCredentials();
  const args = opts.args ?? [];
  // Every listener on a free port, so tests can run side by side.
  const freePorts = [
    ...(args.includes("--port") ? [] : ["--port", "0"]),
    ...(args.includes("--dns-port") ? [] : ["--dns-port", "0"]),
    // The metrics listener has a fixed default port: off unless the test asks for it.
    ...(args.includes("--metrics-port") ? [] : ["--metrics-port", "0"]),
  ];
  // DNS over UDP answered in the platform's own process unless a test asks for answering processes: fewer processes per test.
  const dnsWorkers = args.includes("--dns-workers") ? [] : ["--dns-workers", "0"];
  const child = spawn(
    process.execPath,
    [...BIN_NODE_FLAGS, ...(opts.nodeArgs ?? []), CLI_PATH, "serve", ...freePorts, ...dnsWorkers, "--state-dir", stateDir, ...args],
    {
      env: { ...process.env, ...bootstrapEnv(creds), ...opts.env },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let output = "";
  let logs = "";
  const endpoints = await new Promise<Record<string, string>>((resolve, reject) => {
    let buf = "";
    // A hang guard, not a timing check: on a 2-CPU machine shared with other suites (load 20) a start with workerd
    // and PostgreSQL has taken over 30 s. A platform that did not start in time is killed: left running, it would
    // keep the test process alive.
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`platform did not start in ${START_LIMIT_MS / 1000} s:\n${output}`));
    }, START_LIMIT_MS);
    child.stdout!.on("data", (d: Buffer) => {
      output += d.toString();
      logs += d.toString();
      buf += d.toString();
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (line.includes('"platform ready"')) {
          clearTimeout(timer);
          resolve(JSON.parse(line).endpoints);
        }
      }
    });
    child.stderr!.on("data", (d: Buffer) => (output += d.toString()));
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`platform exited with ${code} before it was ready:\n${output}`));
    });
  });
  // After start, keep collecting output without the ready parser.
  child.removeAllListeners("exit");
  const url = endpoints.edge;
  const apiUrl = `${url}/client/v4`;
  const headers = (extra: Record<string, string> = {}) => ({ authorization: `Bearer ${creds.token}`, ...extra });
  let stopped = false;
  const stop = () =>
    new Promise<void>((resolve) => {
      if (stopped || child.exitCode !== null || child.signalCode !== null) return resolve();
      stopped = true;
      child.once("exit", () => resolve());
      child.kill("SIGTERM");
    });
  return {
    ...creds,
    url,
    apiUrl,
    stateDir,
    endpoints,
    process: child,
    output: () => output,
    logs: () => logs,
    headers,
    keyHeaders: (extra = {}) => ({ "x-auth-email": creds.email, "x-auth-key": creds.apiKey, authorization: "", ...extra }),
    async api(method, path, body, extra) {
      const { request } = await import("undici");
      const res = await request(apiUrl + path, {
        method: method as "GET",
        headers: headers({ ...(body !== undefined ? { "content-type": "application/json" } : {}), ...extra }),
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.body.text();
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        /* a raw body */
      }
      return { status: res.statusCode, body: parsed as never };
    },
    cli: (args, o = {}) =>
      runCli(args, {
        ...o,
        env: { EDGE_API_URL: apiUrl, EDGE_API_TOKEN: creds.token, EDGE_ACCOUNT_ID: creds.accountId, EDGE_STATE_DIR: stateDir, ...o.env },
      }),
    stop,
    async dispose() {
      await stop();
      if (!opts.stateDir) rmSync(stateDir, { recursive: true, force: true });
    },
  };
}
