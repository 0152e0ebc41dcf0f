import { rmSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "../../core/logger.js";
import type { RuntimeDurableObjects } from "../durable-objects/workerd.js";
import type { BindingBackendName } from "../bindings/binding-type.js";
import { BindingServer, type BindingHandler, type BindingTunnelHandler } from "../bindings/server.js";
import type { ModuleSource, ScriptRecord } from "../store.js";
import type { ScheduledOutcome } from "./entry-module.js";
import { ScriptRuntime } from "./script-runtime.js";
import { SocketDir } from "./socket-dir.js";
import { probeWorkerd, type WorkerdBinary } from "./workerd-binary.js";
import { WorkerdLeash } from "./workerd-leash.js";

/** A script with everything workerd needs: its modules' bytes and its secrets' values. */
export interface RunnableScript {
  script: ScriptRecord;
  modules: ModuleSource[];
  secrets: { name: string; text: string }[];
  /** Its Durable Object namespaces and their storage, when it has any. */
  durableObjects?: RuntimeDurableObjects;
  /** It consumes a queue: its process runs the queue dispatcher, and so workerd's experimental features (queue-dispatch.ts). */
  queueConsumer?: boolean;
}

/** All running scripts, by name (names are unique platform-wide), and the binding server they call. */
export class WorkersRuntime {
  private readonly runtimes = new Map<string, ScriptRuntime>();
  readonly bindings: BindingServer;
  private sockets?: SocketDir;
  private binary?: WorkerdBinary;
  private leash?: WorkerdLeash;

  constructor(
    handlers: ReadonlyMap<BindingBackendName, BindingHandler>,
    /** Where generated configs go: <state>/workers-run, removed at start and stop (it holds secrets). */
    private readonly runDir: string,
    private readonly log: Logger,
    /** The workerd executable that runs every script. */
    private readonly workerdPath: string,
    /** The backends that take CONNECT tunnels (service bindings' RPC sessions). */
    tunnels?: ReadonlyMap<BindingBackendName, BindingTunnelHandler>,
    /** Whether someone tails a script (tail/hub.ts): only then does its workerd run the tail worker. */
    private readonly tailedNow: (name: string) => boolean = () => false,
  ) {
    this.bindings = new BindingServer(handlers, log, tunnels);
  }

  /**
   * Finds workerd and starts the binding server; scripts are deployed after it. First it ends any workerd a
   * platform killed outright left running on this state directory.
   */
  async start(): Promise<void> {
    this.binary = await probeWorkerd(this.workerdPath);
    this.log.info({ workerd: this.binary.path, newest_compatibility_date: this.binary.newestCompatibilityDate }, "workerd found");
    const pidDir = join(this.runDir, "_pids");
    await WorkerdLeash.endStrays(pidDir, this.log);
    rmSync(this.runDir, { recursive: true, force: true });
    this.leash = WorkerdLeash.create(pidDir, this.log);
    this.sockets = new SocketDir(this.runDir);
    await this.bindings.start(this.sockets.next("bindings"));
    this.log.info({ address: this.bindings.listenAddress }, "worker binding server listening");
  }

  private newRuntime(name: string): ScriptRuntime {
    if (!this.sockets || !this.binary || !this.leash) throw new Error("workers runtime is not started");
    return new ScriptRuntime(name, {
      dir: join(this.runDir, name),
      log: this.log,
      sockets: this.sockets,
      workerd: this.binary,
      leash: this.leash,
      bindingTarget: (call) => this.bindings.target(call),
      tailed: () => this.tailedNow(name),
    });
  }

  /** Checks that `run` starts, on a workerd that takes no traffic and stops at once; answers its handlers or rejects with workerd's error. */
  async check(run: RunnableScript): Promise<readonly string[]> {
    const running = this.runtimes.get(run.script.name);
    // Checks of a running script take turns with its deploys; a script that does not run here gets a runtime for the check only.
    const rt = running ?? this.newRuntime(run.script.name);
    try {
      return await rt.check(run);
    } finally {
      if (!running) await rt.stop();
    }
  }

  /** Runs `run` as the live version of its script; rejects with workerd's error if it cannot start. */
  async deploy(run: RunnableScript): Promise<void> {
    const name = run.script.name;
    let rt = this.runtimes.get(name);
    const fresh = !rt;
    if (!rt) {
      rt = this.newRuntime(name);
      this.runtimes.set(name, rt);
    }
    try {
      await rt.deploy(run);
    } catch (err) {
      if (fresh && this.runtimes.get(name) === rt) {
        this.runtimes.delete(name);
        await rt.stop();
      }
      throw err;
    }
  }

  async remove(name: string): Promise<void> {
    const rt = this.runtimes.get(name);
    if (!rt) return;
    this.runtimes.delete(name);
    await rt.stop();
  }

  /** The workerd in use (known once started). */
  get workerd(): WorkerdBinary | undefined {
    return this.binary;
  }

  /** Whether a running script's tail worker is attached while nobody tails it, or missing while someone does. */
  tailStale(name: string): boolean {
    const rt = this.runtimes.get(name);
    return rt?.tailed !== undefined && rt.tailed !== this.tailedNow(name);
  }

  lookup(name: string): ScriptRuntime | undefined {
    return this.runtimes.get(name);
  }

  /** Runs one cron tick of a script (see ScriptRuntime.runScheduled); undefined when it does not run or has no scheduled(). */
  runScheduled(name: string, cron: string, scheduledTime: number): Promise<ScheduledOutcome | undefined> {
    return this.runtimes.get(name)?.runScheduled(cron, scheduledTime) ?? Promise.resolve(undefined);
  }

  /** What the running version of a script handles; none while it does not run. */
  handlersOf(name: string): readonly string[] {
    return this.runtimes.get(name)?.handlers ?? [];
  }

  async stop(): Promise<void> {
    const all = [...this.runtimes.values()];
    this.runtimes.clear();
    await Promise.all(all.map((rt) => rt.stop()));
    await this.bindings.stop();
    this.sockets?.remove();
    rmSync(this.runDir, { recursive: true, force: true });
  }
}
