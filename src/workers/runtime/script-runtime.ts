import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "../../core/logger.js";
import { secretEnvironment, workerdConfig, type BindingTarget, type StorageBinding } from "./capnp-config.js";
import type { RunnableScript } from "../model.js";
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
  bindingTarget(accountId: string, binding: StorageBinding): BindingTarget;
}

/** One version as workerd runs it: its config file, and the environment that carries its secrets. */
interface Version {
  file: string;
  env: Record<string, string>;
}

/** Writes the config and modules of one version into its own directory, readable by this user only. */
function writeVersion(dir: string, run: RunnableScript, opts: ScriptRuntimeOptions): Version {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(dir, "modules"), { recursive: true, mode: 0o700 });
  run.modules.forEach((m, i) => writeFileSync(join(dir, "modules", String(i)), m.content, { mode: 0o600 }));
  const config = workerdConfig({
    run,
    compatibilityDate: effectiveCompatibilityDate(run.script.compatibilityDate, opts.workerd),
    modulePath: (i) => `modules/${i}`,
    bindingTarget: (b) => opts.bindingTarget(run.script.accountId, b),
  });
  const file = join(dir, "config.capnp");
  // No secret is in the file, but the binding server's header value is: 0600 inside a 0700 directory.
  writeFileSync(file, config, { mode: 0o600 });
  return { file, env: secretEnvironment(run.secrets) };
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
    let proc: WorkerdProcess;
    try {
      proc = await this.spawn(version);
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

  private spawn(version: Version): Promise<WorkerdProcess> {
    return WorkerdProcess.start(this.opts.workerd.path, version.file, version.env, this.opts.sockets.next("workerd"), this.opts.log, this.tag, {
      leash: this.opts.leash,
    });
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
          const proc = await this.spawn(version);
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
