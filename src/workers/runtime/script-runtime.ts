import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "../../core/logger.js";
import type { BindingCall } from "../bindings/server.js";
import { secretEnvironment, workerdConfig, type BindingTarget } from "./capnp-config.js";
import { askHandlers, entryModule, runScheduledOn, type ScheduledOutcome } from "./entry-module.js";
import type { DurableObjectStorageMode } from "../durable-objects/workerd.js";
import type { RunnableScript } from "./runtime.js";
import type { LeasedMessage, QueueOutcome } from "../../queues/service.js";
import { runQueueOn } from "./queue-dispatch.js";
import type { SocketDir } from "./socket-dir.js";
import { effectiveCompatibilityDate, type WorkerdBinary } from "./workerd-binary.js";
import type { WorkerdLeash } from "./workerd-leash.js";
import { WorkerdProcess } from "./workerd-process.js";

export interface ScriptRuntimeOptions {
  /** Directory for this script's generated configs (inside the state directory). */
  dir: string;
  log: Logger;
  /** Where each workerd process gets its own unix socket. */
  sockets: SocketDir;
  workerd: WorkerdBinary;
  /** Makes each workerd die with the platform and lets the next start end any that did not. */
  leash: WorkerdLeash;
  bindingTarget(call: BindingCall): BindingTarget;
  /**
   * The share of the script's invocations its tail worker reports now (tail/hub.ts): 1 while someone tails it, its
   * Workers Logs sampling rate otherwise; 0: its workerd runs no tail worker.
   */
  tailRate(): number;
}

/** One version as workerd runs it: its config file, the environment that carries its secrets, and its handlers. */
interface Version {
  accountId: string;
  versionId: string;
  file: string;
  env: Record<string, string>;
  /** What its default export handles (entry-module.ts), known once it has started. */
  handlers: readonly string[];
  /** The share of invocations its tail worker reports (0: it runs none). */
  tailRate: number;
  /** It runs the queue dispatcher (a queue consumer), with workerd's --experimental. */
  queueConsumer: boolean;
  /**
   * With Durable Objects: the same version with its objects kept in memory, run first to check that it starts
   * (the objects' files must have one process at a time, see doDeploy).
   */
  checkFile?: string;
}

/** Writes the config and modules of one version into its own directory, readable by this user only. */
function writeVersion(dir: string, run: RunnableScript, opts: ScriptRuntimeOptions): Version {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(dir, "modules"), { recursive: true, mode: 0o700 });
  run.modules.forEach((m, i) => writeFileSync(join(dir, "modules", String(i)), m.content, { mode: 0o600 }));
  const entry = entryModule(
    run.script.mainModule,
    run.durableObjects?.namespaces.map((n) => n.className),
  );
  writeFileSync(join(dir, "entry.js"), entry.source, { mode: 0o600 });
  const tailRate = opts.tailRate();
  const config = (durableObjectStorage: DurableObjectStorageMode) =>
    workerdConfig({
      tailRate,
      run,
      compatibilityDate: effectiveCompatibilityDate(run.script.compatibilityDate, opts.workerd),
      modulePath: (i) => `modules/${i}`,
      entry: { module: entry, path: "entry.js" },
      bindingTarget: opts.bindingTarget,
      durableObjectStorage,
    });
  const file = join(dir, "config.capnp");
  // No secret is in the file, but the binding server's header value is: 0600 inside a 0700 directory.
  writeFileSync(file, config("disk"), { mode: 0o600 });
  const version: Version = {
    accountId: run.script.accountId,
    versionId: run.script.versionId,
    file,
    env: secretEnvironment(run.secrets),
    handlers: [],
    tailRate,
    queueConsumer: run.queueConsumer === true,
  };
  if (run.durableObjects) {
    version.checkFile = join(dir, "check.capnp");
    writeFileSync(version.checkFile, config("memory"), { mode: 0o600 });
  }
  return version;
}

/**
 * Runs one script on its own workerd process (so its log lines carry its name and a crash touches no other
 * script). A new version starts beside the old one; traffic switches once it listens; the old one drains.
 * An unexpected exit is logged and the same version restarted, with a growing delay if it keeps failing.
 */
export class ScriptRuntime {
  private current?: WorkerdProcess;
  private currentVersion?: Version;
  private generation = 0;
  private waiters: (() => void)[] = [];
  private closed = false;
  private restartDelay = 100;
  private chain: Promise<unknown> = Promise.resolve();

  constructor(
    readonly name: string,
    private readonly opts: ScriptRuntimeOptions,
  ) {}

  private get tag() {
    return { script: this.name };
  }

  /** The live process, if one is up. */
  get live(): WorkerdProcess | undefined {
    return this.current;
  }

  get pid(): number | undefined {
    return this.current?.pid;
  }

  /** The account of the version that runs (service bindings reach a Worker of their own account only). */
  get accountId(): string | undefined {
    return this.currentVersion?.accountId;
  }

  /** The id of the version that runs. */
  get versionId(): string | undefined {
    return this.currentVersion?.versionId;
  }

  /** The share of invocations the running version's tail worker reports (0: none; undefined before one has started). */
  get tailRate(): number | undefined {
    return this.currentVersion?.tailRate;
  }

  /** Whether the version that runs is a queue consumer's (with the queue dispatcher). */
  get queueConsumer(): boolean {
    return this.currentVersion?.queueConsumer === true;
  }

  /** The handlers of the version that runs (none before one has started). */
  get handlers(): readonly string[] {
    return this.currentVersion?.handlers ?? [];
  }

  /** Resolves with the live process as soon as one is up (e.g. during a restart after a crash), or undefined after `ms`. */
  async waitLive(ms: number): Promise<WorkerdProcess | undefined> {
    if (this.current) return this.current;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.waiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
    // Re-read through the getter: a waiter ran while we awaited.
    return this.live;
  }

  /**
   * Starts `run` on a workerd of its own that takes no traffic, to see that it starts, then stops it (a version uploaded
   * without deploying it). Its Durable Objects, if any, are kept in memory. Answers its handlers.
   */
  check(run: RunnableScript): Promise<readonly string[]> {
    const next = this.chain.then(async () => {
      if (this.closed) throw new Error("runtime is stopped");
      const dir = join(this.opts.dir, String(++this.generation));
      try {
        const version = writeVersion(dir, run, this.opts);
        const { proc, handlersSocket } = await this.spawn({ ...version, file: version.checkFile ?? version.file });
        try {
          return await this.handlersOf(run, handlersSocket);
        } finally {
          await proc.stop();
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
    this.chain = next.catch(() => undefined);
    return next;
  }

  /** Starts `run`, switches traffic to it and drains the previous process. Rejects (leaving the old one live) if workerd refuses it. */
  deploy(run: RunnableScript): Promise<void> {
    const next = this.chain.then(() => this.doDeploy(run));
    this.chain = next.catch(() => undefined);
    return next;
  }

  private async doDeploy(run: RunnableScript): Promise<void> {
    if (this.closed) throw new Error("runtime is stopped");
    const gen = ++this.generation;
    const dir = join(this.opts.dir, String(gen));
    const version = writeVersion(dir, run, this.opts);
    const runsWith = effectiveCompatibilityDate(run.script.compatibilityDate, this.opts.workerd);
    if (runsWith !== run.script.compatibilityDate) {
      this.opts.log.warn(
        { ...this.tag, compatibility_date: run.script.compatibilityDate, runs_with: runsWith },
        "the script's compatibility date is later than this workerd supports; it runs with the newest date workerd has",
      );
    }
    if (version.checkFile || this.currentVersion?.checkFile) return this.handOver(run, version, dir);
    let proc: WorkerdProcess;
    try {
      const started = await this.spawn(version);
      proc = started.proc;
      version.handlers = await this.handlersOf(run, started.handlersSocket);
    } catch (err) {
      rmSync(dir, { recursive: true, force: true });
      throw err;
    }
    const old = this.current;
    const oldVersion = this.currentVersion;
    this.adopt(proc, version);
    this.opts.log.info({ ...this.tag, version: run.script.versionId, workerd_pid: proc.pid, socket: proc.socketPath }, "worker version live");
    if (old) {
      await old.stop();
      if (oldVersion) rmSync(join(oldVersion.file, ".."), { recursive: true, force: true });
    }
  }

  /**
   * A deploy where the old or the new version has Durable Objects. workerd keeps each object in a SQLite file that
   * nothing locks across processes, and two processes on one directory would each run their own instance of an
   * object, so the versions cannot overlap: the new version is first checked with its objects in memory (a version
   * workerd refuses never stops the old one), then the old one stops taking requests and finishes those in flight,
   * then the new one starts on the objects' directory. Requests arriving in between wait for it (the proxy's
   * waitLive). If it cannot start after all, the old version is started again.
   */
  private async handOver(run: RunnableScript, version: Version, dir: string): Promise<void> {
    try {
      const check = await this.spawn({ ...version, file: version.checkFile ?? version.file });
      version.handlers = await this.handlersOf(run, check.handlersSocket);
      await check.proc.stop();
    } catch (err) {
      rmSync(dir, { recursive: true, force: true });
      throw err;
    }
    const old = this.current;
    const oldVersion = this.currentVersion;
    this.current = undefined;
    await old?.stop();
    let proc: WorkerdProcess;
    try {
      proc = await this.spawnKnown(version);
    } catch (err) {
      rmSync(dir, { recursive: true, force: true });
      if (oldVersion) {
        this.opts.log.error(
          { ...this.tag, err: (err as Error).message },
          "the new version did not start on its Durable Objects; starting the previous one again",
        );
        this.scheduleRestart(oldVersion);
      }
      throw err;
    }
    this.adopt(proc, version);
    this.opts.log.info({ ...this.tag, version: run.script.versionId, workerd_pid: proc.pid, socket: proc.socketPath }, "worker version live");
    if (oldVersion) rmSync(join(oldVersion.file, ".."), { recursive: true, force: true });
  }

  /** Starts a version whose handlers are known already (a restart, or the second start of a hand-over). */
  private async spawnKnown(version: Version): Promise<WorkerdProcess> {
    const { proc, handlersSocket } = await this.spawn(version);
    rmSync(handlersSocket, { force: true });
    return proc;
  }

  /** Starts a workerd on `version`; its "handlers" socket serves only the platform's one question (handlersOf). */
  private async spawn(version: Version): Promise<{ proc: WorkerdProcess; handlersSocket: string }> {
    const handlersSocket = this.opts.sockets.next("handlers");
    const proc = await WorkerdProcess.start({
      binary: this.opts.workerd.path,
      configFile: version.file,
      env: version.env,
      sockets: {
        http: this.opts.sockets.next("workerd"),
        handlers: handlersSocket,
        scheduled: this.opts.sockets.next("scheduled"),
        rpc: this.opts.sockets.next("rpc"),
        ...(version.queueConsumer ? { queue: this.opts.sockets.next("queue") } : {}),
      },
      experimental: version.queueConsumer,
      log: this.opts.log,
      tag: this.tag,
      leash: this.opts.leash,
    });
    return { proc, handlersSocket };
  }

  /**
   * Asks the new version which handlers its default export has, then removes the socket file (workerd keeps
   * listening on it, but nothing can connect any more). A script that does not answer sensibly (its own code
   * runs there) is logged and reported with none; it still runs.
   */
  private async handlersOf(run: RunnableScript, socket: string): Promise<readonly string[]> {
    try {
      return await askHandlers(socket);
    } catch (err) {
      this.opts.log.warn({ ...this.tag, version: run.script.versionId, err: (err as Error).message }, "could not learn the script's handlers");
      return [];
    } finally {
      rmSync(socket, { force: true });
    }
  }

  /**
   * Runs the live version's scheduled() for one cron tick (waiting, like a request, up to 10 s for a process being
   * restarted). Undefined when no version runs or it has no scheduled handler: there is nothing to call.
   */
  async runScheduled(cron: string, scheduledTime: number): Promise<ScheduledOutcome | undefined> {
    const proc = await this.waitLive(10_000);
    if (!proc || !this.handlers.includes("scheduled")) return undefined;
    return runScheduledOn(proc.socketOf("scheduled"), cron, scheduledTime);
  }

  /** Runs the live version's queue() on a batch; undefined when no version runs or it has no queue handler. */
  async runQueue(queueName: string, messages: readonly LeasedMessage[], timeoutMs: number): Promise<QueueOutcome | undefined> {
    const proc = await this.waitLive(10_000);
    const socket = proc?.queueSocket;
    if (!socket || !this.handlers.includes("queue")) return undefined;
    return runQueueOn(socket, queueName, messages, timeoutMs);
  }

  private adopt(proc: WorkerdProcess, version: Version): void {
    this.current = proc;
    this.currentVersion = version;
    for (const w of this.waiters.splice(0)) w();
    const startedAt = Date.now();
    void proc.exited.then(({ code, signal }) => {
      if (proc.isStopping || this.closed || this.current !== proc) return;
      this.current = undefined;
      if (Date.now() - startedAt > 30_000) this.restartDelay = 100;
      this.opts.log.error({ ...this.tag, workerd_pid: proc.pid, code, signal, restart_in_ms: this.restartDelay }, "workerd exited unexpectedly; restarting it");
      this.scheduleRestart(version);
    });
  }

  private scheduleRestart(version: Version): void {
    const delay = this.restartDelay;
    this.restartDelay = Math.min(this.restartDelay * 2, 5_000);
    setTimeout(() => {
      this.chain = this.chain.then(async () => {
        if (this.closed || this.current || this.currentVersion !== version) return;
        try {
          // The same version: its handlers are known already.
          const proc = await this.spawnKnown(version);
          this.adopt(proc, version);
          this.opts.log.info({ ...this.tag, workerd_pid: proc.pid, socket: proc.socketPath }, "workerd restarted");
        } catch (err) {
          this.opts.log.error({ ...this.tag, err: (err as Error).message }, "workerd restart failed");
          this.scheduleRestart(version);
        }
      });
    }, delay).unref();
  }

  /** Stops the process (draining in-flight requests) and removes the generated files. */
  async stop(): Promise<void> {
    this.closed = true;
    await this.chain;
    const proc = this.current;
    this.current = undefined;
    for (const w of this.waiters.splice(0)) w();
    await proc?.stop();
    rmSync(this.opts.dir, { recursive: true, force: true });
  }
}
