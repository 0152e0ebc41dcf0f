import { spawn, type ChildProcess } from "node:child_process";
import { createRequire } from "node:module";
import { createInterface } from "node:readline";
import type { Logger } from "../core/logger.js";

/** The workerd binary shipped by the npm package `workerd`. */
export function workerdBinary(): string {
  const require = createRequire(import.meta.url);
  return require.resolve("workerd/bin/workerd");
}

export class WorkerdStartError extends Error {}

/**
 * One running `workerd serve` with the port of its socket. stdout (console.log of the script) and stderr
 * (uncaught errors, workerd's own diagnostics) reach the platform log, one entry per line, tagged with the script.
 */
export class WorkerdProcess {
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private stopping = false;

  private constructor(
    readonly child: ChildProcess,
    readonly port: number,
  ) {
    this.exited = new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) resolve({ code: child.exitCode, signal: child.signalCode });
      else child.once("exit", (code, signal) => resolve({ code, signal }));
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** True once we asked it to stop: its exit is expected, not a crash. */
  get isStopping(): boolean {
    return this.stopping;
  }

  /** Spawns workerd on `configFile` and resolves once its socket listens; rejects with workerd's own error text. */
  static start(configFile: string, log: Logger, tag: Record<string, unknown>, timeoutMs = 20_000): Promise<WorkerdProcess> {
    const child = spawn(workerdBinary(), ["serve", configFile, "--control-fd=3"], { stdio: ["ignore", "pipe", "pipe", "pipe"] });
    const errLines: string[] = [];
    createInterface({ input: child.stdout! }).on("line", (line) => log.info({ ...tag, stream: "stdout" }, line));
    createInterface({ input: child.stderr! }).on("line", (line) => {
      if (errLines.length < 20) errLines.push(line);
      log.warn({ ...tag, stream: "stderr" }, line);
    });
    return new Promise((resolve, reject) => {
      const fail = (why: string) => {
        clearTimeout(timer);
        child.kill("SIGKILL");
        reject(new WorkerdStartError(`${why}${errLines.length ? `: ${errLines.join("\n")}` : ""}`));
      };
      const timer = setTimeout(() => fail("workerd did not start listening in time"), timeoutMs);
      child.once("error", (e) => fail(`could not run workerd (${e.message})`));
      child.once("exit", (code, signal) => {
        // Let the last stderr lines arrive before reporting them.
        setTimeout(() => fail(`workerd exited during startup (${signal ?? `code ${code}`})`), 50);
      });
      createInterface({ input: child.stdio[3] as NodeJS.ReadableStream }).on("line", (line) => {
        let ev: { event?: string; socket?: string; port?: number };
        try {
          ev = JSON.parse(line);
        } catch {
          return;
        }
        if (ev.event === "listen" && ev.socket === "http" && typeof ev.port === "number") {
          clearTimeout(timer);
          child.removeAllListeners("exit");
          resolve(new WorkerdProcess(child, ev.port));
        }
      });
    });
  }

  /** SIGTERM lets in-flight requests finish; after `graceMs` it is killed outright. */
  async stop(graceMs = 30_000): Promise<void> {
    this.stopping = true;
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill("SIGTERM");
    const timer = setTimeout(() => this.child.kill("SIGKILL"), graceMs);
    await this.exited;
    clearTimeout(timer);
  }
}
