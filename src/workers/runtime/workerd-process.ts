import { spawn, type ChildProcess } from "node:child_process";
import { rmSync } from "node:fs";
import { createInterface } from "node:readline";
import type { Duplex } from "node:stream";
import { Pool } from "undici";
import { relayConnectOptions } from "../../core/http/relay.js";
import type { Logger } from "../../core/logger.js";
import type { WorkerdLeash } from "./workerd-leash.js";

export class WorkerdStartError extends Error {}

/** The sockets of a script's workerd config (runtime/capnp-config.ts); "queue" only in a queue consumer's. */
export type ScriptSocket = "http" | "handlers" | "scheduled" | "queue" | "rpc";

/** The unix socket path of each socket a config names. */
export type WorkerdSockets = Record<Exclude<ScriptSocket, "queue">, string> & { queue?: string };

const removeSockets = (sockets: WorkerdSockets) => {
  for (const path of Object.values(sockets)) if (path) rmSync(path, { force: true });
};

/** How to start one workerd. */
export interface WorkerdStart {
  binary: string;
  configFile: string;
  /** Its whole environment. */
  env: Record<string, string>;
  /** The unix socket path of each socket of the config, by name ("http" is the one traffic goes to): workerd refuses to start without one for every socket its config names. */
  sockets: WorkerdSockets;
  /** Runs it with `--experimental`, which a config using an experimental compatibility flag needs (only a queue consumer's does: queue-dispatch.ts). */
  experimental?: boolean;
  log: Logger;
  /** Fields of its log lines. */
  tag: Record<string, unknown>;
  /** Makes it die with this process. */
  leash?: WorkerdLeash;
  timeoutMs?: number;
}

/**
 * One running `workerd serve`, listening on its own unix sockets (the config's sockets, placed by `--socket-addr`;
 * the files are removed when the process is gone), with a pool of keep-alive connections to its "http" socket. stdout (console.log of the script) and stderr (uncaught errors, workerd's own diagnostics) reach the
 * platform log, one entry per line, tagged with the script.
 */
export class WorkerdProcess {
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Connections to this process only: a new version gets a new pool, so no request can go to a drained process's connection. */
  readonly pool: Pool;
  private stopping = false;
  /** The WebSocket connections the edge carries to this process (websocket-proxy.ts); closed when it stops. */
  private readonly tunnels = new Set<Duplex>();

  /** Where its "http" socket listens. */
  readonly socketPath: string;

  private constructor(
    readonly child: ChildProcess,
    private readonly sockets: WorkerdSockets,
  ) {
    this.socketPath = sockets.http;
    this.exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) resolve({ code: child.exitCode, signal: child.signalCode });
      else child.once("exit", (code, signal) => resolve({ code, signal }));
    }).finally(() => {
      removeSockets(sockets);
      void this.pool.destroy();
    });
    // The edge relays request bodies to workerd on these connections (core/http/relay.ts: the write buffer's bound).
    this.pool = new Pool("http://workerd", { socketPath: this.socketPath, connections: 128, keepAliveTimeout: 30_000, connect: relayConnectOptions });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Where the config's socket `name` listens. */
  socketOf(name: Exclude<ScriptSocket, "queue">): string {
    return this.sockets[name];
  }

  /** Where the queue dispatcher listens: a queue consumer's process only. */
  get queueSocket(): string | undefined {
    return this.sockets.queue;
  }

  /**
   * Counts `socket` (a WebSocket connection to this process) among those to close when it stops; false when it is
   * stopping already, and the caller closes it itself.
   */
  holdTunnel(socket: Duplex): boolean {
    if (this.stopping) return false;
    this.tunnels.add(socket);
    socket.once("close", () => this.tunnels.delete(socket));
    return true;
  }

  /** True once we asked it to stop: its exit is expected, not a crash. */
  get isStopping(): boolean {
    return this.stopping;
  }

  /**
   * Spawns workerd (`binary`) on `configFile` with exactly `env` as its environment, and resolves once it
   * listens on every socket; rejects with workerd's own error text. With a `leash`, it dies with this process.
   */
  static start(opts: WorkerdStart): Promise<WorkerdProcess> {
    const { binary, configFile, env, sockets, log, tag } = opts;
    const args = [
      "serve",
      configFile,
      ...(opts.experimental ? ["--experimental"] : []),
      "--control-fd=3",
      ...Object.entries(sockets).flatMap(([name, path]) => (path ? ["--socket-addr", `${name}=unix:${path}`] : [])),
    ];
    const command = opts.leash?.command(binary, args) ?? { file: binary, args };
    const child = spawn(command.file, command.args, { stdio: ["ignore", "pipe", "pipe", "pipe"], env });
    const pid = child.pid;
    if (pid !== undefined && opts.leash) {
      const leash = opts.leash;
      leash.spawned(pid, configFile);
      child.once("exit", () => leash.exited(pid));
    }
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
        removeSockets(sockets);
        reject(new WorkerdStartError(`${why}${errLines.length ? `: ${errLines.join("\n")}` : ""}`));
      };
      const timer = setTimeout(() => fail("workerd did not start listening in time"), opts.timeoutMs ?? 20_000);
      child.once("error", (e) => fail(`could not run workerd (${e.message})`));
      const exitedEarly = (code: number | null, signal: NodeJS.Signals | null) => {
        // Let the last stderr lines arrive before reporting them.
        setTimeout(() => fail(`workerd exited during startup (${signal ?? `code ${code}`})`), 50);
      };
      child.once("exit", exitedEarly);
      const waiting = new Set(Object.entries(sockets).flatMap(([name, path]) => (path ? [name] : [])));
      createInterface({ input: child.stdio[3] as NodeJS.ReadableStream }).on("line", (line) => {
        let ev: { event?: string; socket?: string };
        try {
          ev = JSON.parse(line);
        } catch {
          return;
        }
        if (ev.event !== "listen" || !ev.socket || !waiting.delete(ev.socket) || waiting.size > 0) return;
        clearTimeout(timer);
        child.off("exit", exitedEarly);
        resolve(new WorkerdProcess(child, sockets));
      });
    });
  }

  private readonly stoppingHooks: (() => void)[] = [];

  /**
   * Runs `fn` when the process is asked to stop: connections it would wait for that are not requests (a service
   * binding's RPC session, which a caller keeps open) are cut there, or workerd would not exit until killed.
   */
  whenStopping(fn: () => void): () => void {
    if (this.stopping) {
      fn();
      return () => undefined;
    }
    this.stoppingHooks.push(fn);
    return () => {
      const i = this.stoppingHooks.indexOf(fn);
      if (i >= 0) this.stoppingHooks.splice(i, 1);
    };
  }

  /** SIGTERM lets in-flight requests finish; after `graceMs` it is killed outright. */
  async stop(graceMs = 30_000): Promise<void> {
    this.stopping = true;
    for (const fn of this.stoppingHooks.splice(0)) fn();
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill("SIGTERM");
    // workerd drains by waiting for its requests, and an open WebSocket is one until either side closes it:
    // without this a redeploy would wait out the grace period and then cut them anyway.
    for (const t of this.tunnels) t.destroy();
    const timer = setTimeout(() => this.child.kill("SIGKILL"), graceMs);
    await this.exited;
    clearTimeout(timer);
  }
}
