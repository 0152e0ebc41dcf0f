import assert from "node:assert/strict";
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { nodeBinary, testClientMissing, testClientModule } from "../../core/testing/node-binary.js";
import type { CliResult, TestPlatform } from "../../core/testing/platform.js";

/** wrangler 3 (a devDependency pinned to the version docs/compatibility.md names), started by its own bin script. */
const WRANGLER_BIN = join(dirname(createRequire(import.meta.url).resolve("wrangler/package.json")), "bin", "wrangler.js");

/** wrangler 4, the latest release, from the test-client folder. */
const WRANGLER4_BIN = testClientModule("wrangler/bin/wrangler.js");
/**
 * The Node wrangler 4 runs on: the suite's own when it is new enough (>= 22.12: the suite on Node 22 or 24, as
 * `npm run test:node24` runs it), else test-clients' Node 22.
 */
const WRANGLER4_NODE = nodeAtLeast(22, 12) ? process.execPath : nodeBinary(22);

function nodeAtLeast(major: number, minor: number): boolean {
  const [ownMajor, ownMinor] = process.versions.node.split(".").map(Number);
  return ownMajor > major || (ownMajor === major && ownMinor >= minor);
}

/** For `test(name, { skip: wrangler4Missing() })`: why wrangler 4 cannot run here, or false. */
export const wrangler4Missing = () => testClientMissing("wrangler 4 or Node 22", WRANGLER4_BIN, WRANGLER4_NODE);

/**
 * The wrangler releases a test runs with (`for (const version of wranglerVersions()) describe(...)`): 3.114 always,
 * and the latest 4 when test-clients/ is installed (under CI, where it must be, its absence fails the file).
 */
export const wranglerVersions = (): (3 | 4)[] => (wrangler4Missing() ? [3] : [3, 4]);

/** A hang guard only: a deploy on a loaded 2-core machine has taken tens of seconds. */
const WRANGLER_LIMIT_MS = 180_000;

/** The run, when wrangler exited 0; else the assertion fails with everything it printed. */
export function wranglerSucceeded<R extends { code: number; stdout: string; stderr: string }>(r: R): R {
  assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
  return r;
}

export interface WranglerOptions {
  cwd: string;
  /** Another account of the platform's user (with `credentials`); the bootstrap account otherwise. */
  accountId?: string;
  /** Instead of the bootstrap token: e.g. `{ CLOUDFLARE_API_KEY, CLOUDFLARE_EMAIL }` for the global key. */
  credentials?: Record<string, string>;
  input?: string;
  /** Which wrangler: 3 (the devDependency, on the suite's Node) by default, or 4 (test-clients, on Node >= 22.12). */
  version?: 3 | 4;
}

/**
 * Runs the real wrangler CLI (3, or 4 with `version: 4`) against the platform, as a user would: `CLOUDFLARE_API_BASE_URL` pointed at its v4 API,
 * the bootstrap token and account. Its home and config directory are a fresh temporary one (no login state or logs of
 * the machine's user are read or written), metrics are off, and its npm update check goes to a closed loopback port
 * so a test never reaches the internet.
 */
export async function runWrangler(p: TestPlatform, args: string[], opts: WranglerOptions): Promise<CliResult> {
  const run = startWrangler(p, args, opts);
  const timer = setTimeout(() => run.child.kill("SIGKILL"), WRANGLER_LIMIT_MS);
  try {
    const code = await run.exited;
    const stdoutBytes = run.stdoutBytes();
    return { code, stdout: stdoutBytes.toString("utf8"), stderr: run.stderr(), stdoutBytes };
  } finally {
    clearTimeout(timer);
  }
}

/** A wrangler started by {@link startWrangler}: its output so far, and its exit (its home is removed then). */
export interface RunningWrangler {
  child: ChildProcessWithoutNullStreams;
  exited: Promise<number>;
  stdoutBytes(): Buffer;
  stdout(): string;
  stderr(): string;
}

/**
 * Starts wrangler as {@link runWrangler} does without waiting for it: for commands that run until interrupted, such
 * as `wrangler tail`. The caller kills it (and awaits `exited`).
 */
export function startWrangler(p: TestPlatform, args: string[], opts: WranglerOptions): RunningWrangler {
  const [node, bin] = opts.version === 4 ? [WRANGLER4_NODE, WRANGLER4_BIN] : [process.execPath, WRANGLER_BIN];
  if (!node || !bin) throw new Error(wrangler4Missing() || "wrangler 4 is not installed");
  const home = mkdtempSync(join(tmpdir(), "edge-wrangler-home-"));
  const child = spawn(node, [bin, ...args], {
    cwd: opts.cwd,
    env: {
      PATH: process.env.PATH,
      HOME: home,
      XDG_CONFIG_HOME: join(home, ".config"),
      CLOUDFLARE_API_BASE_URL: p.apiUrl,
      CLOUDFLARE_ACCOUNT_ID: opts.accountId ?? p.accountId,
      ...(opts.credentials ?? { CLOUDFLARE_API_TOKEN: p.token }),
      WRANGLER_SEND_METRICS: "false",
      npm_config_registry: "http://127.0.0.1:9/",
      NO_COLOR: "1",
      FORCE_COLOR: "0",
    },
    stdio: ["pipe", "pipe", "pipe"],
  });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout.on("data", (d: Buffer) => out.push(d));
  child.stderr.on("data", (d: Buffer) => err.push(d));
  const exited = new Promise<number>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code) => resolve(code ?? 1));
  }).finally(() => rmSync(home, { recursive: true, force: true }));
  // wrangler may exit before its (often empty) input is written: that EPIPE is not its failure (its exit code says).
  child.stdin.on("error", () => undefined);
  child.stdin.end(opts.input ?? "");
  return {
    child,
    exited,
    stdoutBytes: () => Buffer.concat(out),
    stdout: () => Buffer.concat(out).toString("utf8"),
    stderr: () => Buffer.concat(err).toString("utf8"),
  };
}
